#!/usr/bin/env node
'use strict';

// One CLI for the whole product. Each subcommand lives with its component and exports
// { summary, usage, options, main(values, positionals) }; arguments are parsed here with
// node:util parseArgs (strict), so a bad flag prints usage and exits 2 everywhere alike.

const { parseArgs } = require('node:util');

const COMMANDS = {
  gateway: '../gateway/cli',
  'rest-sim': '../rest-sim/cli',
  router: '../simulator/cli',
  run: '../runner/cli',
};

function mainUsage() {
  const lines = Object.entries(COMMANDS).map(([name, mod]) => `  ${name.padEnd(10)} ${require(mod).summary}`);
  return `usage: ged145 <command> [options]\n\ncommands:\n${lines.join('\n')}\n\n'ged145 <command> --help' shows a command's options.\n`;
}

function fail(message, usage) {
  process.stderr.write(`ged145: ${message}\n\n${usage}`);
  process.exit(2);
}

async function main(argv) {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(mainUsage());
    return;
  }
  if (!Object.hasOwn(COMMANDS, name)) fail(`unknown command '${name}'`, mainUsage());
  const command = require(COMMANDS[name]);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: Boolean(command.positionals),
      strict: true,
    });
  } catch (err) {
    fail(err.message, command.usage);
  }
  if (parsed.values.help) {
    process.stdout.write(command.usage);
    return;
  }
  try {
    await command.main(parsed.values, parsed.positionals);
  } catch (err) {
    if (err && err.usage) fail(err.message, command.usage);
    // Expected operator errors (bad config, port in use) carry `expected`: one line, no stack.
    process.stderr.write(`ged145 ${name}: ${err && err.expected ? err.message : (err && err.stack) || err}\n`);
    process.exit(1);
  }
}

main(process.argv.slice(2));
