'use strict';

// A deterministic synthetic customer base: the same seed always gives the same customers, so
// tests, docs and load runs can name real CLIDs. Customer i has CLID 555 + (1000000 + i).

const { prng } = require('../lib/prng');

const FIRST = ['Ada', 'Ben', 'Chloe', 'Dev', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kemi', 'Luca', 'Mira', 'Noor', 'Omar', 'Priya'];
const LAST = [
  'Almeida', 'Brown', 'Chen', 'Dubois', 'Eriksen', 'Fischer', 'Garcia', 'Haddad', 'Ivanova', 'Jensen', 'Kowalski', 'Lopez', 'Moreau', 'Nakamura', 'Okafor',
  'Patel',
];
const TIERS = ['bronze', 'silver', 'gold', 'platinum'];
const SKILLS = ['SG_General', 'SG_Billing', 'SG_Tech', 'SG_Premium'];
const LANGUAGES = ['en', 'es', 'fr', 'de'];


const clidOf = (i) => `555${1000000 + i}`;

function generateCustomers(count = 10000, seed = 145) {
  const rnd = prng(seed);
  const pick = (list) => list[Math.floor(rnd() * list.length)];
  const byClid = new Map();
  const byAccount = new Map();
  for (let i = 0; i < count; i++) {
    const tier = pick(TIERS);
    const customer = {
      clid: clidOf(i),
      accountId: `A${String(100000 + i)}`,
      name: `${pick(FIRST)} ${pick(LAST)}`,
      tier,
      balance: (Math.round(rnd() * 1000000) / 100).toFixed(2),
      skillGroup: tier === 'platinum' ? 'SG_Premium' : pick(SKILLS),
      language: pick(LANGUAGES),
    };
    byClid.set(customer.clid, customer);
    byAccount.set(customer.accountId, customer);
  }
  return { byClid, byAccount, count };
}

module.exports = { generateCustomers, clidOf };
