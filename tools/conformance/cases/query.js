'use strict';

// Queries (docs/protocol.md sections 1, 3, 4 and 6): exactly one reply each, pipelined, with
// the flags and tags a real router sends.

const { serialize, STATUS } = require('../../../lib/protocol');
const { brief, kind, check } = require('../context');

const ONE_REPLY = 'Every request gets exactly one reply: never none, never two.';

const TAG_FIELDS = ['ced', 'cdpd', 'vars', 'ecc', 'eccArrays'];
const tagsOf = (m) => JSON.stringify(TAG_FIELDS.map((k) => m[k] ?? null));

/**
 * The same query's reply with and without a change: both must be the same kind (type and status),
 * and with `tags` carry the same tags (the host read the same question).
 */
async function sameAsPlain(t, peer, changed, what, { tags = false } = {}) {
  const plain = await t.reply(peer, (await sendQuery(t, peer)).invokeId, 'the plain query');
  const id = changed.readUInt32BE(8);
  peer.send(changed);
  const reply = await t.reply(peer, id, `the query with ${what}`);
  check(kind(reply) === kind(plain), `with ${what}: ${brief(reply)}; without: ${brief(plain)}`, { marks: [reply, plain] });
  check(!tags || tagsOf(reply) === tagsOf(plain), `with ${what} the answer's tags are ${tagsOf(reply)}; without: ${tagsOf(plain)}`, { marks: [reply, plain] });
  return `with ${what}: ${brief(reply)}, as without`;
}

async function sendQuery(t, peer, fields = {}) {
  const f = t.queryFields(fields);
  peer.send(serialize.queryReq(f));
  return f;
}

module.exports = [
  {
    id: 'ged145/query/1',
    title: 'a QUERY_REQ gets exactly one reply, with its InvokeID',
    level: 'MUST',
    section: '6',
    requirement: ONE_REPLY,
    expected: 'one QUERY_RESP or FAILURE_CONF with the InvokeID of the query, and nothing more',
    async run(t) {
      const peer = await t.session();
      const f = await sendQuery(t, peer);
      return brief(await t.reply(peer, f.invokeId));
    },
  },
  {
    id: 'ged145/query/2',
    title: 'two hundred pipelined QUERY_REQs are each answered once, matched by InvokeID',
    level: 'MUST',
    section: '1',
    requirement: 'The router pipelines: it sends the next request without waiting, puts no bound on requests outstanding, '
      + 'and matches replies by InvokeID in whatever order they come.',
    expected: '200 replies, one per InvokeID, in any order',
    timeoutMs: 15_000,
    async run(t) {
      const peer = await t.session();
      const ids = [];
      for (let i = 0; i < 200; i++) ids.push((await sendQuery(t, peer, { clid: `55510${String(i).padStart(5, '0')}` })).invokeId);
      await t.replies(peer, ids, 10_000);
      const order = peer.messages.filter((m) => ids.includes(m.invokeId)).map((m) => m.invokeId);
      const inOrder = order.every((id, i) => i === 0 || id > order[i - 1]);
      return `200 in flight: 200 replies, one each (${inOrder ? 'in the order sent' : 'out of order'})`;
    },
  },
  {
    id: 'ged145/query/3',
    title: 'a NoScriptReply query is answered QUERY_RESP status 0 with no tags',
    level: 'MUST',
    section: '3',
    requirement: '`0x02` NoScriptReply (the script wants no data: answer QUERY_RESP status 0 with no tags)',
    expected: 'QUERY_RESP E_AG_NO_ERROR without a tag, to a query whose plain form is answered with data',
    async run(t) {
      const peer = await t.session();
      await t.dataReply(peer);
      const f = t.queryFields({ noScriptReply: true });
      peer.send(serialize.queryReq(f));
      const reply = await t.reply(peer, f.invokeId);
      const tags = reply.vars || reply.ecc || reply.eccArrays || reply.ced || reply.cdpd || reply.unknownTags;
      const plainNoData = reply.type === 'QUERY_RESP' && reply.status === STATUS.E_AG_NO_ERROR && !tags;
      check(plainNoData, `got ${brief(reply)}${tags ? ' with tags' : ''}`, { marks: [reply] });
      return `${brief(reply)}, no tags`;
    },
  },
  {
    id: 'ged145/query/4',
    title: 'a query flagged Duplicate is answered, once',
    level: 'MUST',
    section: '6',
    requirement: ONE_REPLY,
    expected: 'one QUERY_RESP or FAILURE_CONF to the query flagged Duplicate (0x01)',
    async run(t) {
      const peer = await t.session();
      const f = await sendQuery(t, peer, { duplicate: true });
      return brief(await t.reply(peer, f.invokeId));
    },
  },
  {
    id: 'ged145/query/5',
    title: 'unknown flag bits are ignored',
    level: 'MUST',
    section: '3',
    requirement: 'Other bits are ignored.',
    expected: 'a query with flag bits 0xFC set is answered like the same query without them',
    async run(t) {
      const peer = await t.session();
      const q = t.queryReq();
      q[8 + 12] |= 0xfc;
      return sameAsPlain(t, peer, q, 'flags 0xFC');
    },
  },
  {
    id: 'ged145/query/6',
    title: 'unknown tags in a query are kept and ignored, never fatal',
    level: 'MUST',
    section: '4',
    requirement: 'An unknown tag in a request is kept and ignored, never fatal.',
    expected: 'a query with tags 99 and 200 is answered like the same query without them',
    async run(t) {
      const peer = await t.session();
      const q = t.queryReq({ unknownTags: [{ tag: 99, data: 'x' }, { tag: 200, data: Buffer.from([1, 2, 3]) }] });
      return sameAsPlain(t, peer, q, 'unknown tags 99 and 200');
    },
  },
  {
    id: 'ged145/query/7',
    title: 'scalar tags are read with or without a trailing NUL',
    level: 'MUST',
    section: '4',
    requirement: 'A scalar tag may come with or without a trailing NUL, so trailing NULs are stripped when reading',
    expected: 'the query with a NUL after each scalar tag is answered like the same query without, with the same tags',
    async run(t) {
      const peer = await t.session();
      return sameAsPlain(t, peer, t.queryReq({}, { nul: true }), 'trailing NULs', { tags: true });
    },
  },
  {
    id: 'ged145/query/8',
    title: 'InvokeIDs are unsigned 32-bit, echoed whole',
    level: 'MUST',
    section: '1',
    requirement: 'Integers are big-endian.',
    expected: 'replies to InvokeIDs 2147483648 and 4294967295 carry them unchanged',
    async run(t) {
      const peer = await t.session();
      const ids = [2_147_483_648, 4_294_967_295];
      for (const invokeId of ids) peer.send(t.queryReq({ invokeId, routerCallKey: 1 }));
      await t.replies(peer, ids);
      return 'both answered with their InvokeID';
    },
  },
  {
    id: 'ged145/query/9',
    title: 'ECC variables and ECC array elements in a query are read',
    level: 'MUST',
    section: '4',
    requirement: 'ECC names and values end in NUL by layout.',
    expected: 'a query with two ECC pairs and an ECC_ARRAY element is answered like the same query without them',
    async run(t) {
      const peer = await t.session();
      const q = t.queryReq({ ecc: { 'user.acct': '1234', 'user.lang': 'en' }, eccArrays: [{ name: 'user.items', index: 2, value: 'x' }] });
      return sameAsPlain(t, peer, q, 'ECC and ECC_ARRAY');
    },
  },
  {
    id: 'ged145/query/10',
    title: 'a tag of 255 bytes is read',
    level: 'MUST',
    section: '4',
    requirement: 'A tag holds at most 255 bytes',
    expected: 'a query whose VAR9 holds 255 bytes is answered like the same query without it',
    async run(t) {
      const peer = await t.session();
      return sameAsPlain(t, peer, t.queryReq({ vars: { 9: 'v'.repeat(255) } }), 'a 255-byte VAR9');
    },
  },
  {
    id: 'ged145/query/11',
    title: 'a query its backend fails is answered exactly once',
    level: 'MUST',
    section: '6',
    requirement: ONE_REPLY,
    needs: 'failingSubtype',
    expected: 'one reply to a query of the failing subtype, with or without NoScriptReply',
    async run(t) {
      const peer = await t.session();
      const a = await sendQuery(t, peer, { subtype: t.options.failingSubtype });
      const b = await sendQuery(t, peer, { subtype: t.options.failingSubtype, noScriptReply: true });
      const ra = await t.reply(peer, a.invokeId);
      const rb = await t.reply(peer, b.invokeId, 'the NoScriptReply query');
      return `${brief(ra)}; with NoScriptReply ${brief(rb)}`;
    },
  },
  {
    id: 'ged145/query/12',
    title: 'a query its backend fails is answered FAILURE_CONF with a host error',
    level: 'SHOULD',
    section: '5',
    requirement: 'the backend failed or did not answer in time (and no stale or fallback answer was configured)',
    needs: 'failingSubtype',
    expected: 'FAILURE_CONF E_AG_HOST_ERROR1 or E_AG_HOST_ERROR2',
    async run(t) {
      const peer = await t.session();
      const f = await sendQuery(t, peer, { subtype: t.options.failingSubtype });
      const r = await t.reply(peer, f.invokeId);
      const ok = r.type === 'FAILURE_CONF' && (r.status === STATUS.E_AG_HOST_ERROR1 || r.status === STATUS.E_AG_HOST_ERROR2);
      check(ok, `got ${brief(r)}: the router cannot tell the failure from an answer`, { marks: [r] });
      return brief(r);
    },
  },
];
