'use strict';

// An example subtype handler module (routes.<subtype>.module in the config).
// It receives the query as the default contract's JSON and {signal} (aborted at the deadline),
// and returns {vars, ecc, eccArrays, ced, cdpd}. Throw an error with status 4xx (or appError:
// true) to answer E_AG_HOST_ERROR2 with its message; any other throw answers E_AG_HOST_ERROR1.

const VIP_PREFIXES = ['555100'];

module.exports = async function vipCheck(query) {
  if (!query.clid) {
    const err = new Error('no caller ID');
    err.status = 400;
    throw err;
  }
  const vip = VIP_PREFIXES.some((p) => query.clid.startsWith(p));
  return { vars: { 6: vip ? 'VIP' : 'STD' }, ecc: { 'user.vip': vip ? '1' : '0' } };
};
