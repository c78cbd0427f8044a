'use strict';

// GED-145 field encryption (docs/protocol.md section 7) as pure transforms, used by the gateway and
// the router simulator alike. Single DES in ECB mode [decision]: OpenSSL 3 hides single DES in
// its legacy provider, and two-key triple DES (des-ede-ecb) with key K||K computes exactly
// single DES with K (E_K(D_K(E_K(x))) = E_K(x)).

const crypto = require('node:crypto');

const BLOCK = 8;

/**
 * A private key given as 16 hex digits or exactly 8 ASCII characters -> 8 bytes.
 * @param {string} text
 * @returns {Buffer} throws a RangeError for any other text
 */
function parseKey(text) {
  if (typeof text !== 'string') throw new TypeError('a DES key must be a string');
  const t = text.trim();
  if (/^[0-9a-fA-F]{16}$/.test(t)) return Buffer.from(t, 'hex');
  if (t.length === 8 && /^[\x20-\x7e]{8}$/.test(t)) return Buffer.from(t, 'latin1');
  throw new RangeError('a DES key is 16 hex digits or exactly 8 ASCII characters');
}

/**
 * @param {Buffer} key
 * @param {Buffer} data
 * @param {boolean} encrypt
 * @returns {Buffer}
 */
function crypt(key, data, encrypt) {
  if (data.length % BLOCK !== 0) throw new RangeError(`DES data must be a multiple of ${BLOCK} bytes`);
  const k = Buffer.concat([key, key]);
  const c = encrypt ? crypto.createCipheriv('des-ede-ecb', k, null) : crypto.createDecipheriv('des-ede-ecb', k, null);
  c.setAutoPadding(false);
  return Buffer.concat([c.update(data), c.final()]);
}

/**
 * Single DES, ECB, no padding: data must be whole 8-byte blocks.
 * @param {Buffer} key
 * @param {Buffer} data
 * @returns {Buffer}
 */
const desEncrypt = (key, data) => crypt(key, data, true);
/**
 * @param {Buffer} key
 * @param {Buffer} data
 * @returns {Buffer}
 */
const desDecrypt = (key, data) => crypt(key, data, false);

/**
 * The router's SESSION_KEY tag: K||K encrypted with the private key.
 * @param {Buffer} privateKey
 * @param {Buffer} sessionKey
 * @returns {Buffer}
 */
function sealSessionKey(privateKey, sessionKey) {
  return desEncrypt(privateKey, Buffer.concat([sessionKey, sessionKey]));
}

/**
 * SESSION_KEY tag -> the 8-byte session key, or null when it does not decrypt to two equal halves.
 * @param {Buffer} privateKey
 * @param {Buffer | undefined} sealed
 * @returns {Buffer | null}
 */
function openSessionKey(privateKey, sealed) {
  if (!sealed || sealed.length !== 2 * BLOCK) return null;
  const plain = desDecrypt(privateKey, sealed);
  const a = plain.subarray(0, BLOCK);
  return a.equals(plain.subarray(BLOCK)) ? Buffer.from(a) : null;
}

/**
 * A tag's data NUL-padded to a multiple of 8 and encrypted (empty stays empty).
 * @param {Buffer} sessionKey
 * @param {Buffer} data
 * @returns {Buffer}
 */
function encryptField(sessionKey, data) {
  const padded = Buffer.alloc(paddedLength(data.length));
  data.copy(padded);
  return desEncrypt(sessionKey, padded);
}

/**
 * An encrypted tag's data -> the whole plaintext, NUL padding included (the decoder strips it),
 * or null when the data is not whole blocks (such a field is ignored).
 * @param {Buffer} sessionKey
 * @param {Buffer} data
 * @returns {Buffer | null}
 */
function decryptField(sessionKey, data) {
  if (data.length % BLOCK !== 0) return null;
  return desDecrypt(sessionKey, data);
}

/**
 * Bytes a field of `length` bytes takes once NUL-padded to whole DES blocks.
 * @param {number} length
 * @returns {number}
 */
const paddedLength = (length) => Math.ceil(length / BLOCK) * BLOCK;

/** Largest plaintext that still fits a one-byte tag length once padded: 248. */
const MAX_ENCRYPTED_FIELD = 255 - (255 % BLOCK);

/**
 * What an encrypted session passes to the reader (decryptField and the two listeners) and to the
 * serializer (encryptField).
 * @typedef {object} SessionCipher
 * @property {(data: Buffer) => Buffer} encryptField plaintext -> NUL-padded, encrypted tag data
 * @property {(data: Buffer) => Buffer | null} decryptField tag data -> plaintext with its padding, or null: not whole DES blocks
 * @property {((tag: number, why: string) => void) | undefined} [onDropped] a field that does not decrypt, and is ignored
 * @property {((tag: number, plaintext: Buffer) => void) | undefined} [onDecrypted] a field that decrypts
 * @property {number} maxField the largest plaintext one tag carries: 248
 */

/**
 * The one object an encrypted session passes around: to the reader (decryptField; onDropped for a
 * field that does not decrypt, onDecrypted for one that does) and to the serializer
 * (encryptField). sessionKey: the 8-byte K.
 * @param {Buffer} sessionKey
 * @param {{ onDropped?: SessionCipher['onDropped'], onDecrypted?: SessionCipher['onDecrypted'] }} [listeners]
 * @returns {SessionCipher}
 */
function createSessionCipher(sessionKey, { onDropped, onDecrypted } = {}) {
  return {
    encryptField: (data) => encryptField(sessionKey, data),
    decryptField: (data) => decryptField(sessionKey, data),
    onDropped,
    onDecrypted,
    maxField: MAX_ENCRYPTED_FIELD,
  };
}

module.exports = {
  parseKey, desEncrypt, desDecrypt, sealSessionKey, openSessionKey, encryptField, decryptField, createSessionCipher, paddedLength, MAX_ENCRYPTED_FIELD,
};
