'use strict';

// Writes what the router simulator sends and receives as a pcap file, synthesizing Ethernet,
// IPv4 and TCP headers with consistent sequence numbers (a handshake first), so users and tests
// get captures without capture privileges. One TCP segment per socket write / data event,
// split at 1460 bytes, so fragmentation and coalescing show as they happened on the wire.

const fs = require('node:fs');

const MSS = 1460;

function ipChecksum(buf, start, end) {
  let sum = 0;
  for (let i = start; i < end; i += 2) sum += buf.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return (~sum) & 0xffff;
}

function ipv4(addr) {
  const parts = String(addr || '127.0.0.1').replace(/^::ffff:/, '').split('.').map(Number);
  return parts.length === 4 && parts.every((p) => p >= 0 && p < 256) ? parts : [127, 0, 0, 1];
}

class PcapWriter {
  constructor(file) {
    this.fd = fs.openSync(file, 'w');
    const header = Buffer.alloc(24);
    header.writeUInt32LE(0xa1b2c3d4, 0);
    header.writeUInt16LE(2, 4);
    header.writeUInt16LE(4, 6);
    header.writeUInt32LE(65535, 16);
    header.writeUInt32LE(1, 20); // LINKTYPE_ETHERNET
    fs.writeSync(this.fd, header);
    this.ipId = 1;
  }

  /** A flow for one connection: {out(buf), in(buf), close()}. */
  flow({ clientAddress, clientPort, serverAddress, serverPort }) {
    const client = { ip: ipv4(clientAddress), port: clientPort, seq: 1000 };
    const server = { ip: ipv4(serverAddress), port: serverPort, seq: 5000 };
    const seg = (from, to, flags, payload = Buffer.alloc(0)) => {
      this.segment(from, to, flags, payload);
      from.seq = (from.seq + payload.length + (flags & 0x03 ? 1 : 0)) >>> 0; // SYN and FIN count one
    };
    seg(client, server, 0x02); // SYN
    seg(server, client, 0x12); // SYN+ACK
    seg(client, server, 0x10); // ACK
    const send = (from, to, buf) => {
      for (let i = 0; i < buf.length; i += MSS) seg(from, to, 0x18, buf.subarray(i, i + MSS)); // PSH+ACK
    };
    return {
      out: (buf) => send(client, server, buf),
      in: (buf) => send(server, client, buf),
      close: () => seg(client, server, 0x11), // FIN+ACK
    };
  }

  segment(from, to, flags, payload) {
    const frame = Buffer.alloc(14 + 20 + 20 + payload.length);
    frame.set([0x02, 0, 0, 0, 0, to === from ? 1 : 2, 0x02, 0, 0, 0, 0, 1], 0);
    frame.writeUInt16BE(0x0800, 12);
    const ip = 14;
    frame[ip] = 0x45;
    frame.writeUInt16BE(20 + 20 + payload.length, ip + 2);
    frame.writeUInt16BE(this.ipId++ & 0xffff, ip + 4);
    frame[ip + 8] = 64;
    frame[ip + 9] = 6; // TCP
    frame.set(from.ip, ip + 12);
    frame.set(to.ip, ip + 16);
    frame.writeUInt16BE(ipChecksum(frame, ip, ip + 20), ip + 10);
    const tcp = ip + 20;
    frame.writeUInt16BE(from.port, tcp);
    frame.writeUInt16BE(to.port, tcp + 2);
    frame.writeUInt32BE(from.seq >>> 0, tcp + 4);
    frame.writeUInt32BE(flags & 0x10 ? to.seq >>> 0 : 0, tcp + 8);
    frame[tcp + 12] = 5 << 4;
    frame[tcp + 13] = flags;
    frame.writeUInt16BE(65535, tcp + 14);
    payload.copy(frame, tcp + 20);
    const now = Date.now();
    const rec = Buffer.alloc(16);
    rec.writeUInt32LE(Math.floor(now / 1000), 0);
    rec.writeUInt32LE((now % 1000) * 1000, 4);
    rec.writeUInt32LE(frame.length, 8);
    rec.writeUInt32LE(frame.length, 12);
    fs.writeSync(this.fd, Buffer.concat([rec, frame]));
  }

  close() {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

module.exports = { PcapWriter };
