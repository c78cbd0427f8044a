'use strict';

// Which origins go through the forward proxy: backend.proxy, else the environment as curl reads
// it, with NO_PROXY (config/backend.js compileProxy, backend/engines/proxy.js proxyFor).

const assert = require('node:assert/strict');
const { compileProxy } = require('../../../../gateway/config/backend');
const { proxyFor } = require('../../../../gateway/backend/engines/proxy');
const { ConfigError } = require('../../../../lib/errors');

describe('forward proxy selection', () => {
  it('backend.proxy for every origin; the environment per scheme; nothing set, no proxy', () => {
    assert.equal(compileProxy(null, {}), null);
    const set = compileProxy('http://proxy:3128', { HTTPS_PROXY: 'http://other:1' });
    assert.equal(proxyFor(set, 'https://crm.example'), 'http://proxy:3128');
    assert.equal(proxyFor(set, 'http://crm.example:8080'), 'http://proxy:3128');
    const env = compileProxy(null, { https_proxy: 'http://sp:3128', HTTP_PROXY: 'http://p:3128' });
    assert.equal(proxyFor(env, 'https://crm.example'), 'http://sp:3128');
    assert.equal(proxyFor(env, 'http://crm.example'), 'http://p:3128');
    assert.equal(proxyFor(compileProxy(null, { HTTPS_PROXY: 'http://sp:3128' }), 'http://crm.example'), null);
  });

  it('NO_PROXY: hosts, domains with or without a dot, host:port, *', () => {
    const p = compileProxy('http://proxy:3128', { NO_PROXY: 'localhost, .corp.example,internal.example:8443 ,10.0.0.5' });
    assert.equal(proxyFor(p, 'http://localhost:8080'), null);
    assert.equal(proxyFor(p, 'https://crm.corp.example'), null);
    assert.equal(proxyFor(p, 'https://corp.example'), null);
    assert.equal(proxyFor(p, 'https://notcorp.example'), 'http://proxy:3128');
    assert.equal(proxyFor(p, 'https://internal.example:8443'), null);
    assert.equal(proxyFor(p, 'https://internal.example'), 'http://proxy:3128', 'another port');
    assert.equal(proxyFor(p, 'http://10.0.0.5:80'), null);
    assert.equal(proxyFor(compileProxy('http://proxy:3128', { no_proxy: '*' }), 'https://any.example'), null);
  });

  it('a proxy that is not an http URL is one line naming where it came from', () => {
    assert.throws(() => compileProxy('proxy:3128', {}), (e) => e instanceof ConfigError && /backend\.proxy must be an http:\/\/host:port proxy URL/.test(e.message));
    assert.throws(() => compileProxy(null, { HTTPS_PROXY: 'socks5://p:1080' }), /HTTPS_PROXY must be an http:\/\/host:port proxy URL/);
  });
});
