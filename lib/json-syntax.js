'use strict';

// Where a JSON text stops being JSON, said without quoting it. V8's own message quotes the text
// around the fault ("Unexpected token 'p', ..."password":p4ssw0rd-V"..."), and a config file's
// fault is often a secret that lost its quotes: that snippet went to the log, /status and
// `config check`. This scanner is run only once JSON.parse has failed; it walks the text with an
// explicit stack (a file of 4 MB of "[" must not overflow ours) and reports the line, the column,
// the key whose value it was reading (as a dotted path) and what was expected there, in words
// that hold no character of the file.

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const LITERALS = ['true', 'false', 'null'];
/** A key is shown only when it looks like a setting's name; anything else may be a value that slipped. */
const SHOWN_KEY = /^[\x20-\x7e]{1,64}$/;
/** Segments of a path shown (a file nested a thousand deep says where in its last few). */
const MAX_PATH = 8;

/**
 * The first syntax fault of text: {offset, line, column, key, problem}; key is the dotted path of
 * the value being read ("backend.auth.password"; null at the top), null when text is valid JSON.
 */
function jsonSyntaxFault(text) {
  const s = new Scanner(text);
  const problem = s.run();
  if (problem === null) return null;
  const before = text.slice(0, s.i);
  const line = before.split('\n').length;
  const column = s.i - before.lastIndexOf('\n');
  return {
    offset: s.i, line, column, key: s.path(), problem,
  };
}

class Scanner {
  constructor(text) {
    this.text = text;
    this.i = 0;
    // One entry per open object or list: {object, key (the last key read, or an index), count}.
    this.stack = [];
  }

  path() {
    const parts = [];
    for (const f of this.stack) {
      if (f.key === null) break;
      if (!f.object) parts.push(`[${f.key}]`);
      else parts.push(SHOWN_KEY.test(f.key) ? f.key : '(a key)');
    }
    if (parts.length === 0) return null;
    const shown = parts.length > MAX_PATH ? ['…', ...parts.slice(-MAX_PATH)] : parts;
    return shown.join('.').replace(/\.\[/g, '[');
  }

  skipSpace() {
    while (this.i < this.text.length && WS.has(this.text.charCodeAt(this.i))) this.i++;
  }

  /** null when the whole text is one JSON value, else what was expected where it stopped. */
  run() {
    let problem = this.value();
    while (problem === null && this.stack.length > 0) problem = this.next();
    if (problem !== null) return problem;
    this.skipSpace();
    return this.i < this.text.length ? 'more text after the end of the JSON value' : null;
  }

  /** Reads one value, or opens an object or list. */
  value() {
    this.skipSpace();
    if (this.i >= this.text.length) return ended(this.stack);
    const c = this.text[this.i];
    if (c === '{' || c === '[') {
      this.i++;
      this.stack.push({
        object: c === '{', key: null, count: 0, fresh: true,
      });
      return null; // its members are read by next(), not here: nesting costs no depth of our stack
    }
    if (c === '"') return this.string() === null ? null : 'a string that is not closed, or holds a line break or a bad \\ escape';
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    for (const word of LITERALS) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return null;
      }
    }
    return 'a value was expected here: a string in double quotes, a number, true, false, null, an object or a list';
  }

  /** At the start of a member of the innermost object or list: a key and its value, or an item. */
  member() {
    const f = this.stack[this.stack.length - 1];
    if (!f.object) {
      f.key = f.count++;
      return this.value();
    }
    this.skipSpace();
    if (this.text[this.i] !== '"') return this.i >= this.text.length ? ended(this.stack) : 'a key in double quotes was expected';
    const start = this.i + 1;
    const bad = this.string();
    if (bad !== null) return 'a key in double quotes is not closed';
    f.key = this.text.slice(start, this.i - 1);
    f.count++;
    this.skipSpace();
    if (this.text[this.i] !== ':') return this.i >= this.text.length ? ended(this.stack) : 'a colon was expected after the key';
    this.i++;
    return this.value();
  }

  /**
   * In the innermost object or list: its first member (or its close, when empty), or, after a
   * member, a comma and the next one, or its close.
   */
  next() {
    const f = this.stack[this.stack.length - 1];
    this.skipSpace();
    const close = f.object ? '}' : ']';
    if (this.i >= this.text.length) return ended(this.stack);
    if (this.text[this.i] === close) {
      this.i++;
      this.stack.pop();
      return null;
    }
    if (f.fresh) {
      f.fresh = false;
      return this.member();
    }
    if (this.text[this.i] !== ',') {
      return f.object ? 'a comma or } was expected after the value (a string missing its quotes?)' : 'a comma or ] was expected after the item';
    }
    this.i++;
    this.skipSpace();
    if (this.text[this.i] === close) return f.object ? 'a comma before } (JSON takes none)' : 'a comma before ] (JSON takes none)';
    return this.member();
  }

  /** Past a string starting at this.i; null, or a non-null value when it is not a JSON string (this.i left at the fault). */
  string() {
    const { text } = this;
    let j = this.i + 1;
    while (j < text.length) {
      const c = text.charCodeAt(j);
      if (c === 0x22) {
        this.i = j + 1;
        return null;
      }
      if (c < 0x20) break;
      if (c === 0x5c) {
        const e = text[j + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(j + 2, j + 6))) break;
          j += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) break;
        j += 2;
        continue;
      }
      j++;
    }
    this.i = j;
    return false;
  }

  number() {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.text.slice(this.i, this.i + 400));
    if (m === null) return 'a number was expected here';
    this.i += m[0].length;
    return null;
  }
}

const ended = (stack) => {
  if (stack.length === 0) return 'the text ends where a value was expected';
  return `the file ends inside ${stack[stack.length - 1].object ? 'an object (a } missing?)' : 'a list (a ] missing?)'}`;
};

module.exports = { jsonSyntaxFault };
