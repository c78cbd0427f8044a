'use strict';

// What a token endpoint's answer says, as text: whether its access_token can be sent as a bearer
// token at all (RFC 6750), and, when it refused, its words for /ready and the log. auth.js asks.

const { text: { printable } } = require('../../lib/protocol');

const MAX_ERROR_CHARS = 200; // of a token endpoint's error text, in /ready and the log

/**
 * What a refusing token endpoint said, for /ready and the log: OAuth2's error and
 * error_description (RFC 6749 section 5.2), else the body itself (a proxy's or a load balancer's
 * page: its title, or its text without tags), on one printable line; '' when there is nothing.
 */
function errorText(json, text) {
  if (json !== null && typeof json === 'object' && typeof json.error === 'string') {
    const more = typeof json.error_description === 'string' ? ` (${oneLine(json.error_description)})` : '';
    return `: ${shorten(`${oneLine(json.error)}${more}`)}`;
  }
  if (typeof text !== 'string' || text.trim() === '') return '';
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(text);
  const words = title !== null && title[1].trim() !== '' ? title[1] : text.replace(/<[^>]*>/g, ' ');
  const line = shorten(oneLine(words));
  return line === '' ? '' : `: ${line}`;
}

/**
 * RFC 6750 section 2.1: a bearer token is b64token, 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" /
 * "+" / "/" ) *"=". A token outside it cannot be sent as it came: the undici engine refuses a
 * control character or one past U+00FF on every request (no 401 ever comes to drop the token),
 * and axios drops them and sends a token that is not the one given. It is the token endpoint's
 * failure, the same whatever the engine: refused here, with its back-off.
 */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const TOKEN_CHAR = /[A-Za-z0-9\-._~+/]/;

/** null for a b64token, else the first character out of place: its code point and place, never the token (a secret). */
function notB64token(token) {
  if (B64TOKEN.test(token)) return null;
  let i = 0;
  while (i < token.length && TOKEN_CHAR.test(token[i])) i++;
  if (i > 0) while (token[i] === '=') i++; // '=' pads the end of a token: never all of it, never before another character
  const code = token.codePointAt(i).toString(16).toUpperCase().padStart(4, '0');
  return `U+${code} at character ${i + 1} of ${token.length}`;
}

const oneLine = (s) => printable(s.replace(/\s+/g, ' ').trim());
const shorten = (s) => (s.length > MAX_ERROR_CHARS ? `${s.slice(0, MAX_ERROR_CHARS - 3)}...` : s);

module.exports = { errorText, notB64token };
