#!/usr/bin/env node
'use strict';

// One CLI for the whole product. Each subcommand lives with its component and exports
// { summary, usage, options, main(values, positionals) }; arguments are parsed here with
// node:util parseArgs (strict), so a bad flag prints usage and exits 2 everywhere alike.

const { parseArgs } = require('node:util');
const { closest } = require('../lib/closest');
const { CODES } = require('../lib/errors');

const COMMANDS = {
  gateway: '../gateway/cli',
  config: '../gateway/config/cli',
  'rest-sim': '../rest-sim/cli',
  router: '../simulator/cli',
  run: '../runner/cli',
  decode: '../tools/decode/cli',
  conformance: '../tools/conformance/cli',
  replay: '../tools/replay/cli',
  why: '../tools/why/cli',
  'shadow-report': '../tools/shadow-report/cli',
};

function mainUsage() {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, mod]) => `  ${name.padEnd(width)} ${require(mod).summary}`);
  return `usage: ged145 <command> [options]\n\ncommands:\n${lines.join('\n')}\n\n'ged145 <command> --help' shows a command's options.\n`;
}

/** A usage error: one line, a pointer to the help, exit 2 (the whole help only with --help). */
function fail(message, helpCommand) {
  process.stderr.write(`ged145: ${message}\nRun '${helpCommand} --help' for the options.\n`);
  process.exit(2);
}

/**
 * parseArgs' message made one line, with the closest option for a misspelt one: by spelling, or
 * a known option the word starts with (--backend-url is --backend), and the environment variable
 * when the word is one's name (GED145_BACKEND_URL).
 */
function usageMessage(err, options, command) {
  const first = String(err.message).split('\n')[0];
  const unknown = /^Unknown option '(--?[^']+)'/.exec(first);
  if (unknown) {
    const word = unknown[1].replace(/^-+/, '');
    const names = Object.keys(options);
    const guess = closest(word, names) || names.find((n) => word.startsWith(`${n}-`)) || null;
    const env = `GED145_${word.toUpperCase().replace(/-/g, '_')}`;
    const envNote = command === 'gateway' && require('../gateway/config').ENV_NAMES.includes(env) ? `; ${env} is the environment variable` : '';
    return `unknown option ${unknown[1]}${guess ? ` (did you mean --${guess}?${envNote ? ` ${envNote.slice(2)}` : ''})` : envNote}`;
  }
  const ambiguous = /^Option '(--[^' ]+)[^']*' argument is ambiguous/.exec(first);
  if (ambiguous) return `${ambiguous[1]} needs a value; a value starting with '-' is written ${ambiguous[1]}=VALUE`;
  return first;
}

async function main(argv) {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(mainUsage());
    return;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    process.stdout.write(`${require('../package.json').version}\n`);
    return;
  }
  if (!Object.hasOwn(COMMANDS, name)) {
    const guess = closest(name, Object.keys(COMMANDS));
    fail(`unknown command '${name}'${guess ? ` (did you mean '${guess}'?)` : `; commands: ${Object.keys(COMMANDS).join(', ')}`}`, 'ged145');
  }
  const command = require(COMMANDS[name]);
  const options = { ...command.options, help: { type: 'boolean', short: 'h' } };
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options,
      allowPositionals: Boolean(command.positionals),
      strict: true,
    });
  } catch (err) {
    fail(usageMessage(err, options, name), `ged145 ${name}`);
  }
  if (parsed.values.help) {
    process.stdout.write(command.usage);
    return;
  }
  try {
    await command.main(parsed.values, parsed.positionals);
  } catch (err) {
    switch (err && err.code) {
      case CODES.USAGE:
        fail(err.message, `ged145 ${name}`);
        break;
      case CODES.OPERATOR: // expected (bad config, port in use): one line per problem, no stack
      case CODES.CONFIG:
        process.stderr.write(`${err.message.split('\n').map((line) => `ged145 ${name}: ${line}`).join('\n')}\n`);
        break;
      default: // a defect: the stack helps whoever reports it
        process.stderr.write(`ged145 ${name}: ${(err && err.stack) || err}\n`);
    }
    process.exit(1);
  }
}

// `ged145 decode ... | head`: a reader that goes away is no error of ours.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

main(process.argv.slice(2));
