#!/usr/bin/env node
import { helpText, UsageError } from './cli-options.js';
import { PROBE_COMMAND, SERVE_COMMAND, WRAP_COMMAND } from './commands.js';

// The entry only picks the command; each command parses its own options table (cli-options.ts).
const args = process.argv.slice(2);
const [first, ...rest] = args;
if (first === '--help' || first === '-h' || first === 'help') {
  process.stdout.write(`${helpText([SERVE_COMMAND, WRAP_COMMAND, PROBE_COMMAND])}\n`);
} else {
  const name = first === 'wrap' || first === 'probe' ? first : 'serve';
  try {
    // Loaded on use: --help and usage errors answer without loading the ledgers and adapters.
    if (name === 'wrap') await (await import('./fence/fence-cli.js')).runWrap(rest);
    else if (name === 'probe') process.exitCode = await (await import('./fence/fence-cli.js')).runProbe(rest);
    else await (await import('./serve-cli.js')).runServe(args);
  } catch (e) {
    process.stderr.write(`retrysafe-mcp${name === 'serve' ? '' : ` ${name}`}: ${(e as Error).message}\n`);
    const usage =
      e instanceof UsageError ||
      ['RETRYSAFE_FENCE_CONFIG', 'RETRYSAFE_CONFIG'].includes(String((e as { code?: unknown }).code));
    process.exit(usage ? 2 : 1);
  }
}
