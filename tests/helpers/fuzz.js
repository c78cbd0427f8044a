'use strict';

// Random and mutated GED-145 frames for fuzzing a live gateway: mutations of the vectors
// (flipped bytes, wrong lengths, truncations, huge tag counts, unknown tags) and plain noise.

const fs = require('node:fs');
const path = require('node:path');
const { serialize } = require('../../lib/protocol');
const { prng } = require('../../lib/prng');

const vectors = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'vectors.json'), 'utf8'));
const SEEDS = [
  ...vectors.valid.filter((v) => v.direction === 'router->host' && !v.name.startsWith('open')).map((v) => Buffer.from(v.hex, 'hex')),
  ...vectors.invalid.filter((v) => v.expect.kind === 'reject').map((v) => Buffer.from(v.hex, 'hex')),
];

function withLength(body, typeId) {
  const b = Buffer.alloc(8 + body.length);
  b.writeUInt32BE(body.length, 0);
  b.writeUInt32BE(typeId, 4);
  body.copy(b, 8);
  return b;
}

class Fuzzer {
  constructor(seed = 1) {
    this.rnd = prng(seed);
  }

  int(n) {
    return Math.floor(this.rnd() * n);
  }

  /** One frame. `fatalShare` of them may carry a length the host must refuse. */
  frame(fatalShare = 0.001) {
    const r = this.rnd();
    const base = SEEDS[this.int(SEEDS.length)];
    if (r < fatalShare) {
      const b = Buffer.from(base);
      b.writeUInt32BE(0x10000 + this.int(0x7fff0000), 0);
      return b;
    }
    if (r < 0.35) { // flip 1-4 bytes after the length field
      const b = Buffer.from(base);
      for (let i = this.int(4) + 1; i > 0; i--) if (b.length > 4) b[4 + this.int(b.length - 4)] ^= 1 << this.int(8);
      return b;
    }
    if (r < 0.55) { // truncate the body, keep the header honest
      const body = base.subarray(8, 8 + this.int(base.length - 7));
      return withLength(body, base.readUInt32BE(4));
    }
    if (r < 0.65) { // a huge number of tiny tags
      const n = 200 + this.int(1800);
      const tags = Buffer.alloc(n * 2);
      for (let i = 0; i < n; i++) { tags[2 * i] = this.int(256); tags[2 * i + 1] = 0; }
      const fixed = Buffer.from('0000000100000001000000010000', 'hex').subarray(0, 13);
      fixed.writeUInt32BE(this.int(0xffffffff), 0);
      return withLength(Buffer.concat([fixed, tags]), 9);
    }
    if (r < 0.75) { // random tags with random lengths (overruns, bad ECC, unknown tags)
      const n = 1 + this.int(20);
      const parts = [Buffer.from([0, 0, 0, this.int(256), 0, 0, 0, 1, 0, 0, 0, 1, this.int(4)])];
      for (let i = 0; i < n; i++) {
        const len = this.int(40);
        const data = Buffer.alloc(Math.max(0, len - (this.rnd() < 0.2 ? 3 : 0)));
        for (let j = 0; j < data.length; j++) data[j] = this.int(256);
        parts.push(Buffer.from([this.int(30), len]), data);
      }
      return withLength(Buffer.concat(parts), 9);
    }
    if (r < 0.85) { // noise body under a plausible header with any type
      const body = Buffer.alloc(this.int(64));
      for (let j = 0; j < body.length; j++) body[j] = this.int(256);
      return withLength(body, this.int(20));
    }
    return Buffer.from(base); // the seed itself
  }

  /** A well-formed query whose echo the canary can check. */
  static query(invokeId) {
    return serialize.queryReq({
      invokeId, routerCallDay: 1, routerCallKey: invokeId, subtype: 'echo', vars: { 1: `v${invokeId}` }, ecc: { 'user.id': String(invokeId) },
    });
  }
}

module.exports = { Fuzzer };
