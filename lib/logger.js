'use strict';

// winston loggers for every component: readable lines on the console, and (for the gateway) JSON
// lines in a size-rotated file. Expected conditions are logged as one line, never a stack.

const winston = require('winston');

const consoleFormat = winston.format.printf(({ level, message, timestamp, component, ...meta }) => {
  const extra = Object.entries(meta)
    .filter(([k]) => typeof k === 'string')
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${timestamp} ${level.padEnd(5)} ${component ? `[${component}] ` : ''}${message}${extra ? ` ${extra}` : ''}`;
});

/**
 * createLogger({component, level, console, file, maxSize, maxFiles}).
 * console: true (default) writes readable lines to stderr; file: a path for JSON lines.
 */
function createLogger({
  component, level = 'info', console: toConsole = true, file, maxSize = 10 * 1024 * 1024, maxFiles = 5,
} = {}) {
  const transports = [];
  if (toConsole) {
    transports.push(new winston.transports.Console({
      stderrLevels: ['error', 'warn', 'info', 'debug'],
      format: winston.format.combine(winston.format.timestamp(), consoleFormat),
    }));
  }
  if (file) {
    transports.push(new winston.transports.File({
      filename: file,
      maxsize: maxSize,
      maxFiles,
      tailable: true,
      format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    }));
  }
  if (transports.length === 0) transports.push(new winston.transports.Console({ silent: true }));
  return winston.createLogger({ level, defaultMeta: component ? { component } : undefined, transports });
}

module.exports = { createLogger };
