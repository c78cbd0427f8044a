'use strict';

// winston loggers for every component: readable lines on the console, and (for the gateway) JSON
// lines in a size-rotated file. Expected conditions are logged as one line, never a stack.

const fs = require('node:fs');
const path = require('node:path');
const winston = require('winston');
const { OperatorError } = require('./errors');

// Text that came off the wire (CONFIG, a subtype, an error from the backend) may hold newlines or
// terminal escapes: on the console they would forge log lines or colour the terminal. Every
// control character is shown escaped instead (the JSON file escapes them by itself).
const CONTROL = /[\x00-\x1f\x7f]/g;
const NAMED = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeControl(text) {
  return text.replace(CONTROL, (c) => NAMED[c] || `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

const consoleFormat = winston.format.printf(({ level, message, timestamp, component, ...meta }) => {
  const extra = Object.entries(meta)
    .filter(([k, v]) => typeof k === 'string' && v !== undefined)
    .map(([k, v]) => `${k}=${escapeControl(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join(' ');
  return `${timestamp} ${level.padEnd(5)} ${component ? `[${component}] ` : ''}${escapeControl(String(message))}${extra ? ` ${extra}` : ''}`;
});

/**
 * The log file must be writable before the first line: winston would otherwise hang or fail
 * silently on a missing directory, a read-only file or a path under /proc.
 */
function checkLogFile(file) {
  let fd;
  try {
    const stat = fs.statSync(file, { throwIfNoEntry: false });
    if (stat && !stat.isFile()) throw new OperatorError(`log file ${file} cannot be opened for writing: not a regular file`);
    // A file that is not there yet is made and removed again: `config check` leaves nothing behind.
    if (stat) fd = fs.openSync(file, 'a');
    else {
      fd = fs.openSync(file, 'wx');
      fs.unlinkSync(file);
    }
  } catch (err) {
    if (err instanceof OperatorError) throw err;
    const dir = path.dirname(path.resolve(file));
    const hint = err.code === 'ENOENT' && !fs.existsSync(dir) ? ` (directory ${dir} does not exist)` : '';
    throw new OperatorError(`log file ${file} cannot be opened for writing: ${err.code || err.message}${hint}`);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const MAX_SIZE = 10 * 1024 * 1024;
const MAX_FILES = 5;
/** Marks the transports a logger's settings made (console, file), apart from any added later (the status page's). */
const OWN = Symbol('ged145.logSetting');

const consoleTransport = () => Object.assign(new winston.transports.Console({
  stderrLevels: ['error', 'warn', 'info', 'debug'],
  format: winston.format.combine(winston.format.timestamp(), consoleFormat),
}), { [OWN]: 'console' });

/**
 * A file of lines rotated as the log is: at maxSize the file becomes FILE1 (its name with 1
 * before the extension: ged1451.log), the older ones move up, maxFiles in all. zipped: the
 * rotated files are gzipped (FILE1.gz...). Its `log({[MESSAGE]: text}, done)` writes text and a
 * newline; done is called once the file can take more.
 */
function rotatingFile(file, { maxSize = MAX_SIZE, maxFiles = MAX_FILES, zipped = false, format } = {}) {
  checkLogFile(file);
  return new winston.transports.File({
    filename: file,
    maxsize: maxSize,
    maxFiles,
    tailable: true,
    zippedArchive: zipped,
    format,
  });
}

function fileTransport(file, maxSize, maxFiles) {
  return Object.assign(rotatingFile(file, {
    maxSize, maxFiles, format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
  }), { [OWN]: 'file', file });
}

/**
 * createLogger({component, level, console, file, maxSize, maxFiles}).
 * console: true (default) writes readable lines to stderr; file: a path for JSON lines.
 */
function createLogger({
  component, level = 'info', console: toConsole = true, file, maxSize = MAX_SIZE, maxFiles = MAX_FILES,
} = {}) {
  const transports = [];
  if (toConsole) transports.push(consoleTransport());
  if (file) transports.push(fileTransport(file, maxSize, maxFiles));
  if (transports.length === 0) transports.push(Object.assign(new winston.transports.Console({ silent: true }), { [OWN]: 'silent' }));
  return winston.createLogger({ level, defaultMeta: component ? { component } : undefined, transports });
}

/**
 * A reload's log settings on a running logger made by createLogger: the level, the console, and
 * the file, which is opened afresh on every reload (a new path is written from now on; the same
 * path after logrotate moved the file is a new file, as nginx's reopen does), the old one closed
 * once its lines are written. A file that cannot be opened throws before anything changes (the
 * reload is refused: config index.js checks it first). Transports added by others are left alone.
 */
function applyLogSettings(logger, { level, console: toConsole = true, file = null }) {
  const own = logger.transports.filter((t) => t[OWN] !== undefined);
  if (own.length === 0) { // not made by createLogger (a test's capturing logger): its level only
    logger.level = level;
    return;
  }
  const next = file ? fileTransport(file, MAX_SIZE, MAX_FILES) : null;
  logger.level = level;
  const hasConsole = own.some((t) => t[OWN] === 'console');
  for (const t of own) {
    if (t[OWN] === 'console' && toConsole) continue;
    logger.remove(t);
    if (t[OWN] === 'file') t.close();
  }
  if (toConsole && !hasConsole) logger.add(consoleTransport());
  if (next !== null) logger.add(next);
  if (!toConsole && next === null) logger.add(Object.assign(new winston.transports.Console({ silent: true }), { [OWN]: 'silent' }));
}

/**
 * Ends logger and resolves once its files have written every line (at most waitMs), so that a
 * process about to exit keeps its last lines: the stop, and the summaries written at it.
 */
function closeLogger(logger, waitMs = 2000) {
  const files = logger.transports.filter((t) => t instanceof winston.transports.File);
  if (files.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    let left = files.length;
    const done = () => { if (--left === 0) resolve(); };
    for (const t of files) t.once('finish', done);
    setTimeout(resolve, waitMs).unref();
    logger.end();
  });
}

module.exports = { createLogger, checkLogFile, applyLogSettings, closeLogger, rotatingFile, MAX_SIZE };
