#!/usr/bin/env node
import { main } from './cli.js';

// A reader that stops early (`retrysafe cards | head`) closes the pipe: the output is no longer wanted, but the
// command goes on to its end (a batch of resolutions is not cut in the middle) and exits as it would have.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
});

process.exitCode = await main(process.argv.slice(2));
