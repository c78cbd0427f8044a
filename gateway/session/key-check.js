'use strict';

// Does the router of an encrypted session hold this host's DES private key? OPEN cannot tell:
// under ECB, K||K decrypts to two equal halves under any private key (docs/protocol.md, section
// 7). Only the fields can: with another key each one decrypts to 8-byte blocks of noise, which
// fail the decoder's ASCII test (a block passes it once in 256) and are dropped. A session read
// with the wrong key sent the backend a blank query and the router QUERY_RESP status 0 for every
// call, so the router never reached its ErrorThreshold.
//
// The evidence, per QUERY_REQ: the fields the decoder dropped, and of those it read, the ones
// that are not text (the cipher's onDropped and onDecrypted, heard while the frame is decoded).
// A field reads as text when it is printable ASCII followed by its NUL padding (NULs inside an
// ECC field separate its names and values): a wrong key's 8-byte block passes that about once in
// 2,800, where the decoder's ASCII test lets one in 256 through. A query cannot be used when its
// SUBTYPE, or more of its fields than not, fail: it is refused with E_AG_INVALID_KEY. With the
// right key a field fails only when the router sent something other than text, which it does not.
// Once such a query comes on a session whose failed fields outnumber its readable ones, the
// session's key is wrong, and every later query on it is refused too, even one whose fields
// happen to pass.

const { TAGS } = require('../../lib/protocol');

/** Printable ASCII, then only the NUL padding; NULs anywhere in an ECC field (its separators). */
function readsAsText(tag, plain) {
  const ecc = tag === TAGS.ECC || tag === TAGS.ECC_ARRAY;
  const start = tag === TAGS.ECC_ARRAY ? 1 : 0; // an ECC_ARRAY's index byte
  let end = plain.length;
  if (!ecc) while (end > start && plain[end - 1] === 0) end--;
  for (let i = start; i < end; i++) {
    const b = plain[i];
    if ((b < 0x20 || b > 0x7e) && !(ecc && b === 0)) return false;
  }
  return true;
}

const newFrame = () => ({ read: 0, failed: 0, dropped: [], subtypeFailed: false });

class KeyCheck {
  constructor() {
    this.frame = newFrame(); // the fields of the frame being decoded
    this.read = 0; // fields of the session's queries that read as text
    this.failed = 0; // and that did not (dropped by the decoder, or not text)
    this.wrongKey = false;
    this.refused = new WeakSet(); // the QUERY_REQs to refuse, judged when read, answered in their turn
  }

  /** The cipher's hooks (des.createSessionCipher). */
  hooks() {
    return {
      onDecrypted: (tag, plain) => {
        if (readsAsText(tag, plain)) this.frame.read++;
        else this.fail(tag);
      },
      onDropped: (tag, why) => {
        this.frame.dropped.push({ tag, why });
        this.fail(tag);
      },
    };
  }

  fail(tag) {
    this.frame.failed++;
    if (tag === TAGS.SUBTYPE) this.frame.subtypeFailed = true;
  }

  /**
   * Right after a QUERY_REQ q is decoded: what its fields say. {refused: whether q is to be
   * refused, wrongKeyNow: the session's key was found wrong with this query, dropped: [{tag, why}],
   * the fields the decoder dropped}.
   */
  judge(q) {
    const {
      read, failed, dropped, subtypeFailed,
    } = this.frame;
    this.frame = newFrame();
    this.read += read;
    this.failed += failed;
    const unusable = subtypeFailed || failed > read;
    let wrongKeyNow = false;
    if (unusable && !this.wrongKey && this.failed > this.read) {
      this.wrongKey = true;
      wrongKeyNow = true;
    }
    const refused = this.wrongKey || unusable;
    if (refused) this.refused.add(q);
    return { refused, wrongKeyNow, dropped };
  }

  /** Whether q was judged unusable when it was read. */
  refuses(q) {
    return this.refused.has(q);
  }
}

/**
 * What a verdict (KeyCheck#judge) tells the operator, in the session's log: a router with another
 * key said once, refused queries and dropped fields throttled. Given what it needs of the session:
 * {log, throttle, session, peer, counters} (its id and peer for the lines; counters.droppedFields,
 * the fields dropped so far, read for the first line). Returns the number of fields this verdict
 * dropped, for the session to count.
 */
function reportVerdict(verdict, {
  log, throttle, session, peer, counters,
}) {
  if (verdict.wrongKeyNow) {
    log.warn('QUERY_REQ fields do not decrypt with this session\'s key: the router and this host have different DES private keys '
      + '(GED145_DES_KEY or des.keyFile); every query of this session is answered FAILURE_CONF E_AG_INVALID_KEY', {
      session, peer, droppedFields: counters.droppedFields + verdict.dropped.length,
    });
  } else if (verdict.refused) {
    const n = throttle.hit('undecryptable-query');
    if (n) log.warn('QUERY_REQ refused (E_AG_INVALID_KEY): its SUBTYPE or most of its fields do not decrypt', { session, count: n });
  } else {
    for (const { tag, why } of verdict.dropped) {
      const n = throttle.hit('dropped-field');
      if (n) log.warn(`ignored an encrypted field: ${why} (do the router and this host share one DES key?)`, { session, tag, droppedFields: n });
    }
  }
  return verdict.dropped.length;
}

module.exports = { KeyCheck, reportVerdict };
