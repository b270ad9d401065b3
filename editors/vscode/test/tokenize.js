'use strict';
// Tokenizes Fuse text with the extension's grammar, the way VS Code does
// (vscode-textmate + the Oniguruma WebAssembly build).
const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const ROOT = path.join(__dirname, '..');
const GRAMMAR = path.join(ROOT, 'syntaxes', 'fuse.tmLanguage.json');

let grammarPromise;

function loadGrammar() {
  if (!grammarPromise) {
    const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm')).buffer;
    const onigLib = oniguruma.loadWASM(wasm).then(() => ({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }));
    const registry = new vsctm.Registry({
      onigLib,
      loadGrammar: async (scopeName) => {
        if (scopeName !== 'source.fuse') {
          return null;
        }
        return vsctm.parseRawGrammar(fs.readFileSync(GRAMMAR, 'utf8'), GRAMMAR);
      },
    });
    grammarPromise = registry.loadGrammar('source.fuse');
  }
  return grammarPromise;
}

/** [{line, text, scopes}] for every token of every line. */
async function tokenize(text) {
  const grammar = await loadGrammar();
  let state = vsctm.INITIAL;
  const out = [];
  text.split(/\r?\n/).forEach((line, lineNo) => {
    const result = grammar.tokenizeLine(line, state);
    for (const token of result.tokens) {
      out.push({
        line: lineNo,
        start: token.startIndex,
        text: line.slice(token.startIndex, token.endIndex),
        scopes: token.scopes,
      });
    }
    state = result.ruleStack;
  });
  return out;
}

module.exports = { loadGrammar, tokenize, ROOT };

if (require.main === module) {
  // node test/tokenize.js FILE: print the tokens (for writing tests)
  const file = process.argv[2];
  tokenize(fs.readFileSync(file, 'utf8')).then((tokens) => {
    for (const t of tokens) {
      if (t.text.trim()) {
        console.log(`${t.line}:${t.start}\t${JSON.stringify(t.text)}\t${t.scopes.slice(1).join(' ')}`);
      }
    }
  });
}
