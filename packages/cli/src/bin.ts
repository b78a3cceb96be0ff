#!/usr/bin/env node
import { enableCompileCache } from 'node:module';

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
