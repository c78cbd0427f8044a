'use strict';

// Packet captures in, TCP payload segments out: pcap and pcapng files; Ethernet (with VLAN tags),
// Linux cooked (SLL, SLL2), BSD loopback and raw IP link types; IPv4 and IPv6; TCP. Each segment:
// {ts (seconds), src, dst, srcPort, dstPort, seq, syn, ack, data}. Nothing here knows GED-145.

const PCAP_MAGIC = new Set([0xa1b2c3d4, 0xa1b23c4d, 0xd4c3b2a1, 0x4d3cb2a1]);
const PCAPNG_MAGIC = 0x0a0d0d0a;

/** 'pcap', 'pcapng' or null, from a file's first bytes. */
function captureKind(buf) {
  if (buf.length < 4) return null;
  if (buf.readUInt32BE(0) === PCAPNG_MAGIC) return 'pcapng';
  if (PCAP_MAGIC.has(buf.readUInt32BE(0))) return 'pcap';
  return null;
}

/** Every packet of a capture: {ts, linkType, data}. Throws on a file that is not one. */
function* packets(buf) {
  const kind = captureKind(buf);
  if (kind === 'pcap') yield* pcapPackets(buf);
  else if (kind === 'pcapng') yield* pcapngPackets(buf);
  else throw new Error('not a pcap or pcapng file');
}

function* pcapPackets(buf) {
  const magic = buf.readUInt32BE(0);
  const le = magic === 0xd4c3b2a1 || magic === 0x4d3cb2a1;
  const nanos = magic === 0xa1b23c4d || magic === 0x4d3cb2a1;
  const u32 = (o) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const linkType = u32(20) & 0xffff;
  let o = 24;
  while (o + 16 <= buf.length) {
    const ts = u32(o) + u32(o + 4) / (nanos ? 1e9 : 1e6);
    const incl = u32(o + 8);
    if (o + 16 + incl > buf.length) break; // a truncated last record
    yield { ts, linkType, data: buf.subarray(o + 16, o + 16 + incl) };
    o += 16 + incl;
  }
}

function* pcapngPackets(buf) {
  let le = true;
  const interfaces = [];
  let o = 0;
  while (o + 12 <= buf.length) {
    const typeBE = buf.readUInt32BE(o);
    if (typeBE === PCAPNG_MAGIC) le = buf.readUInt32LE(o + 8) === 0x1a2b3c4d; // Section Header: byte order
    const u32 = (at) => (le ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
    const type = typeBE === PCAPNG_MAGIC ? PCAPNG_MAGIC : u32(o);
    const len = u32(o + 4);
    if (len < 12 || o + len > buf.length) break;
    const body = o + 8;
    if (type === PCAPNG_MAGIC) interfaces.length = 0; // a new section has its own interfaces
    else if (type === 1) interfaces.push({
      linkType: (le ? buf.readUInt16LE(body) : buf.readUInt16BE(body)), resolution: tsResolution(buf, body + 8, o + len - 4, le),
    });
    else if (type === 6) {
      const iface = interfaces[u32(body)] || { linkType: 1, resolution: 1e6 };
      const ts = (u32(body + 4) * 2 ** 32 + u32(body + 8)) / iface.resolution;
      const captured = u32(body + 12);
      yield { ts, linkType: iface.linkType, data: buf.subarray(body + 20, body + 20 + captured) };
    } else if (type === 3) {
      const iface = interfaces[0] || { linkType: 1 };
      yield { ts: 0, linkType: iface.linkType, data: buf.subarray(body + 4, o + len - 4) };
    }
    o += len;
  }
}

/** if_tsresol (option 9) of an Interface Description Block: units per second (default 1e6). */
function tsResolution(buf, from, to, le) {
  let o = from;
  while (o + 4 <= to) {
    const code = le ? buf.readUInt16LE(o) : buf.readUInt16BE(o);
    const len = le ? buf.readUInt16LE(o + 2) : buf.readUInt16BE(o + 2);
    if (code === 0) break;
    if (code === 9 && len >= 1) {
      const v = buf[o + 4];
      return v & 0x80 ? 2 ** (v & 0x7f) : 10 ** v;
    }
    o += 4 + Math.ceil(len / 4) * 4;
  }
  return 1e6;
}

/** The IP packet inside a link-layer frame, or null. */
function ipOf(linkType, d) {
  switch (linkType) {
    case 1: { // Ethernet
      let o = 12;
      let type = d.length >= 14 ? d.readUInt16BE(12) : 0;
      while ((type === 0x8100 || type === 0x88a8) && d.length >= o + 6) { o += 4; type = d.readUInt16BE(o); }
      return type === 0x0800 || type === 0x86dd ? d.subarray(o + 2) : null;
    }
    case 0: case 108: return d.length > 4 ? d.subarray(4) : null; // BSD loopback
    case 101: case 12: case 14: return d; // raw IP
    case 113: return d.length > 16 ? d.subarray(16) : null; // Linux cooked
    case 276: return d.length > 20 ? d.subarray(20) : null; // Linux cooked v2
    default: return null;
  }
}

/** The TCP segment in a link-layer frame, or null. */
function tcpOf(linkType, frame) {
  const ip = ipOf(linkType, frame);
  if (ip === null || ip.length < 20) return null;
  let src;
  let dst;
  let t;
  const version = ip[0] >> 4;
  if (version === 4) {
    if (ip[9] !== 6) return null;
    const ihl = (ip[0] & 0x0f) * 4;
    const total = Math.min(ip.readUInt16BE(2) || ip.length, ip.length);
    src = `${ip[12]}.${ip[13]}.${ip[14]}.${ip[15]}`;
    dst = `${ip[16]}.${ip[17]}.${ip[18]}.${ip[19]}`;
    t = ip.subarray(ihl, total);
  } else if (version === 6) {
    if (ip.length < 40 || ip[6] !== 6) return null; // no extension headers
    const v6 = (o) => Array.from({ length: 8 }, (_, i) => ip.readUInt16BE(o + 2 * i).toString(16)).join(':');
    src = v6(8);
    dst = v6(24);
    t = ip.subarray(40, 40 + ip.readUInt16BE(4));
  } else return null;
  if (t.length < 20) return null;
  const off = (t[12] >> 4) * 4;
  return {
    src, dst, srcPort: t.readUInt16BE(0), dstPort: t.readUInt16BE(2), seq: t.readUInt32BE(4), syn: (t[13] & 0x02) !== 0, ack: (t[13] & 0x10) !== 0,
    data: t.subarray(off),
  };
}

/** Every TCP segment of a capture, in capture order: {ts, src, dst, srcPort, dstPort, seq, syn, ack, data}. */
function* segments(buf) {
  for (const p of packets(buf)) {
    const s = tcpOf(p.linkType, p.data);
    if (s !== null) yield { ts: p.ts, ...s };
  }
}

module.exports = { captureKind, packets, segments };
