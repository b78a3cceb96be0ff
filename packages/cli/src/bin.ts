#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { enableCompileCache } from 'node:module';

// The floor of `engines` (node:sqlite, the embedded ledger, needs no flag from there on): said once, at start, rather
// than as a failure of every step that opens a ledger.
const floor = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node.slice(2);
const level = (v: string) => v.split('.').reduce((n, part, i) => (i < 2 ? n * 1000 + Number(part) : n), 0);
if (level(process.versions.node) < level(floor)) {
  process.stderr.write(
    `retrysafe needs Node ${floor} or later (its embedded ledger is node:sqlite, without a flag from ${floor}); this is Node ${process.versions.node}\n`,
  );
  process.exit(2);
}

// Node keeps the compiled modules between runs (in the OS temp dir; NODE_DISABLE_COMPILE_CACHE=1 turns it off): every
// command after the first starts faster. Enabled before the CLI's modules load, so they are the ones cached.
enableCompileCache();
const { main } = await import('./cli.js');

// A reader that stops early (`retrysafe cards | head`, or `2>&1 | head`) closes the pipe: the output is no longer
// wanted, but the command goes on to its end (a batch of resolutions is not cut in the middle) and exits as it would have.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
  });

process.exitCode = await main(process.argv.slice(2));
