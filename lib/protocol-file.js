'use strict';

// --protocol FILE for the router simulator and ged145 decode: the same profile the gateway takes
// in its config's \`protocol\` section (a gateway config file works as it is), so all three speak
// one numbering. Applied to this process's codec.

const fs = require('node:fs');
const { profile: { setProfile } } = require('./protocol');
const { UsageError } = require('./errors');

/** Reads FILE ({protocol: {...}} or the section itself) and applies it; returns its versions, if any. */
function applyProtocolFile(file) {
  let json;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--protocol ${file}: ${err.code || err.message}`);
  }
  const section = json && typeof json.protocol === 'object' && json.protocol !== null ? json.protocol : json;
  try {
    setProfile({ messageTypes: section.messageTypes, status: section.status });
  } catch (err) {
    throw new UsageError(`--protocol ${file}: ${err.message}`);
  }
  return Array.isArray(section.versions) ? section.versions : undefined;
}

module.exports = { applyProtocolFile };
