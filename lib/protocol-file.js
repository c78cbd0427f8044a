'use strict';

// --protocol FILE for the router simulator and ged145 decode: the same profile the gateway takes
// in its config's \`protocol\` section (a gateway config file works as it is), so all three speak
// one numbering. The profile is handed to the readers and serializers of the command that reads it.

const fs = require('node:fs');
const { createProfile, ProfileError } = require('./protocol');
const { UsageError } = require('./errors');

/** Reads FILE ({protocol: {...}} or the section itself): {profile, versions (or undefined)}. */
function readProtocolFile(file) {
  let json;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--protocol ${file}: ${err.code || err.message}`);
  }
  const section = json && typeof json.protocol === 'object' && json.protocol !== null ? json.protocol : json;
  let profile;
  try {
    profile = createProfile({ messageTypes: section.messageTypes, status: section.status });
  } catch (err) {
    // A bad numbering reads as the gateway's config loader says it ("config: protocol.status...").
    throw new UsageError(`--protocol ${file}: ${err instanceof ProfileError ? 'config: ' : ''}${err.message}`);
  }
  return { profile, versions: Array.isArray(section.versions) ? section.versions : undefined };
}

module.exports = { readProtocolFile };
