'use strict';

// The router allowlist: addresses and CIDR ranges, IPv4 and IPv6, checked before a byte of a
// connection is read. An IPv4 router reaches a dual-stack listener as ::ffff:a.b.c.d; that form
// and the plain one are the same address here, in the list and on the socket.

const net = require('node:net');
const { ConfigError } = require('../../lib/errors');

const MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/** a.b.c.d for an IPv4-mapped IPv6 address, the address itself otherwise. */
function unmap(address) {
  const m = MAPPED.exec(address);
  return m ? m[1] : address;
}

/**
 * entries: ["10.1.2.3", "10.0.0.0/8", "::1", "fd00::/8", "::ffff:10.1.2.3"] -> {allows(address)}.
 * Throws an Error naming the first entry that is neither an address nor a CIDR range.
 */
function compileAllowlist(entries) {
  const list = new net.BlockList();
  for (const entry of entries) {
    if (typeof entry !== 'string') throw new ConfigError(`${JSON.stringify(entry)} is not an address`);
    const [addr, prefix, extra] = entry.trim().split('/');
    const address = unmap(addr);
    const family = net.isIP(address);
    if (family === 0 || extra !== undefined) throw new ConfigError(`'${entry}' is not an IP address or CIDR range`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) {
      list.addAddress(address, type);
      continue;
    }
    let bits = Number(prefix);
    // ::ffff:10.0.0.0/104 is 10.0.0.0/8 written as IPv6.
    if (address !== addr && family === 4) bits -= 96;
    if (!/^\d+$/.test(prefix) || bits < 0 || bits > (family === 4 ? 32 : 128)) throw new ConfigError(`'${entry}' has a bad prefix length`);
    list.addSubnet(address, bits, type);
  }
  return {
    allows(remoteAddress) {
      if (typeof remoteAddress !== 'string') return false;
      const address = unmap(remoteAddress);
      const family = net.isIP(address);
      return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

module.exports = { compileAllowlist };
