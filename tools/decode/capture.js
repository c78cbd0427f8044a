'use strict';

// Packet captures in, TCP payload segments out: pcap and pcapng files; Ethernet (with VLAN tags),
// Linux cooked (SLL, SLL2), BSD loopback and raw IP link types; IPv4 and IPv6; TCP. Each segment:
// {ts (seconds), src, dst, srcPort, dstPort, seq, syn, ack, data}. Nothing here knows GED-145.

const { CaptureError } = require('../../lib/errors');

const PCAP_MAGIC = new Set([0xa1b2c3d4, 0xa1b23c4d, 0xd4c3b2a1, 0x4d3cb2a1]);
const PCAPNG_MAGIC = 0x0a0d0d0a;

/** 'pcap', 'pcapng' or null, from a file's first bytes. */
function captureKind(buf) {
  if (buf.length < 4) return null;
  if (buf.readUInt32BE(0) === PCAPNG_MAGIC) return 'pcapng';
  if (PCAP_MAGIC.has(buf.readUInt32BE(0))) return 'pcap';
  return null;
}


/** Bytes from a Buffer, in order: take(n) -> the next n bytes, or null when fewer are left. */
class BufferSource {
  constructor(buf) {
    this.buf = buf;
    this.offset = 0;
  }

  take(n) {
    if (this.offset + n > this.buf.length) return null;
    const out = this.buf.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }
}

const WINDOW = 1024 * 1024;

/**
 * Bytes from a file descriptor through a window of about a megabyte: a capture of any size is
 * read in bounded memory. A record larger than the window gets a buffer of its own.
 */
class FileSource {
  constructor(fd) {
    this.fd = fd;
    this.buf = Buffer.alloc(0);
    this.offset = 0;
    this.position = 0; // in the file, of the byte after buf
    this.ended = false;
  }

  take(n) {
    while (this.buf.length - this.offset < n && !this.ended) this.fill(n);
    if (this.buf.length - this.offset < n) return null;
    const out = this.buf.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }

  fill(n) {
    const left = this.buf.subarray(this.offset);
    const next = Buffer.allocUnsafe(Math.max(WINDOW, n) + left.length);
    left.copy(next, 0);
    const got = require('node:fs').readSync(this.fd, next, left.length, next.length - left.length, this.position);
    if (got === 0) this.ended = true;
    this.position += got;
    this.buf = next.subarray(0, left.length + got);
    this.offset = 0;
  }
}

/** Every packet of a capture: {ts, linkType, data}. Throws a CaptureError on a file that is not one, or ends inside a header. */
function* packets(source) {
  const head = source.take(4);
  if (head === null) throw new CaptureError('not a pcap or pcapng file (too short)');
  const magic = head.readUInt32BE(0);
  if (magic === PCAPNG_MAGIC) yield* pcapngPackets(source, head);
  else if (PCAP_MAGIC.has(magic)) yield* pcapPackets(source, head);
  else throw new CaptureError('not a pcap or pcapng file');
}

function* pcapPackets(source, head) {
  const rest = source.take(20);
  if (rest === null) throw new CaptureError('the pcap file header is cut short (24 bytes needed)');
  const magic = head.readUInt32BE(0);
  const le = magic === 0xd4c3b2a1 || magic === 0x4d3cb2a1;
  const nanos = magic === 0xa1b23c4d || magic === 0x4d3cb2a1;
  const u32 = (b, o) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
  const linkType = u32(rest, 16) & 0xffff;
  for (;;) {
    const rec = source.take(16);
    if (rec === null) return;
    const ts = u32(rec, 0) + u32(rec, 4) / (nanos ? 1e9 : 1e6);
    const data = source.take(u32(rec, 8));
    if (data === null) return; // a truncated last record
    yield { ts, linkType, data };
  }
}

function* pcapngPackets(source, head) {
  let le = true;
  const interfaces = [];
  let first = head;
  for (;;) {
    const start = first === null ? source.take(4) : first;
    first = null;
    if (start === null) return;
    const lenBytes = source.take(4);
    if (lenBytes === null) return;
    const typeBE = start.readUInt32BE(0);
    let body;
    if (typeBE === PCAPNG_MAGIC) {
      const order = source.take(4); // Section Header: its byte-order magic says how to read the rest
      if (order === null) return;
      le = order.readUInt32LE(0) === 0x1a2b3c4d;
      const len = le ? lenBytes.readUInt32LE(0) : lenBytes.readUInt32BE(0);
      if (len < 28 || source.take(len - 12) === null) return;
      interfaces.length = 0; // a new section has its own interfaces
      continue;
    }
    const type = le ? start.readUInt32LE(0) : typeBE;
    const len = le ? lenBytes.readUInt32LE(0) : lenBytes.readUInt32BE(0);
    if (len < 12 || len % 4 !== 0) throw new CaptureError(`a pcapng block of length ${len} (the file is damaged)`);
    body = source.take(len - 8);
    if (body === null) return; // a truncated last block
    body = body.subarray(0, len - 12); // without the trailing length
    const u32 = (o) => (le ? body.readUInt32LE(o) : body.readUInt32BE(o));
    if (type === 1 && body.length >= 8) {
      interfaces.push({ linkType: (le ? body.readUInt16LE(0) : body.readUInt16BE(0)), resolution: tsResolution(body, 8, body.length, le) });
    } else if (type === 6 && body.length >= 20) {
      const iface = interfaces[u32(0)] || { linkType: 1, resolution: 1e6 };
      const ts = (u32(4) * 2 ** 32 + u32(8)) / iface.resolution;
      yield { ts, linkType: iface.linkType, data: body.subarray(20, 20 + u32(12)) };
    } else if (type === 3 && body.length >= 4) {
      const iface = interfaces[0] || { linkType: 1 };
      yield { ts: 0, linkType: iface.linkType, data: body.subarray(4) };
    }
  }
}

/** if_tsresol (option 9) of an Interface Description Block: units per second (default 1e6). */
function tsResolution(buf, from, to, le) {
  let o = from;
  while (o + 4 <= to) {
    const code = le ? buf.readUInt16LE(o) : buf.readUInt16BE(o);
    const len = le ? buf.readUInt16LE(o + 2) : buf.readUInt16BE(o + 2);
    if (code === 0) break;
    if (code === 9 && len >= 1 && o + 4 < to) {
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

/** Every TCP segment of a capture, in capture order: {ts, src, dst, srcPort, dstPort, seq, syn, ack, data}. source: a Buffer, or a BufferSource/FileSource. */
function* segments(source) {
  for (const p of packets(Buffer.isBuffer(source) ? new BufferSource(source) : source)) {
    const s = tcpOf(p.linkType, p.data);
    if (s !== null) yield { ts: p.ts, ...s };
  }
}

module.exports = { captureKind, segments, BufferSource, FileSource, CaptureError };
