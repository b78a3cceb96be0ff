#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { suggest } from '@retrysafe/core/suggest';
import {
  type CliCommand,
  CONFIG_CODES,
  helpText,
  PROBE_COMMAND,
  parseOptions,
  SERVE_COMMAND,
  UsageError,
  WRAP_COMMAND,
} from './cli-options.js';

// The floor of `engines`, as the retrysafe CLI says it (node:sqlite, the embedded ledger, needs no flag from there on).
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const floor: string = pkg.engines.node.slice(2);
const level = (v: string) => v.split('.').reduce((n, part, i) => (i < 2 ? n * 1000 + Number(part) : n), 0);
if (level(process.versions.node) < level(floor)) {
  process.stderr.write(
    `retrysafe-mcp needs Node ${floor} or later (its embedded ledger is node:sqlite, without a flag from ${floor}); this is Node ${process.versions.node}\n`,
  );
  process.exit(2);
}

// Node keeps the compiled modules between runs (in the OS temp dir; NODE_DISABLE_COMPILE_CACHE=1 turns it off), as the
// retrysafe CLI does: enabled before the commands' modules load, so every start after the first is faster.
enableCompileCache();
// The entry only picks the command; each command parses its own options table (cli-options.ts).
const args = process.argv.slice(2);
const [first, ...rest] = args;
// What follows `--` is the upstream server's command line, its own --help included.
const ours = args.includes('--') ? args.slice(0, args.indexOf('--')) : args;
// Serving takes no command word: any other word first is a misspelt command, refused before --help is looked at.
const COMMANDS = ['help', 'wrap', 'probe'];
if (first !== undefined && !first.startsWith('-') && !COMMANDS.includes(first)) {
  process.stderr.write(
    `retrysafe-mcp: unknown command ${JSON.stringify(first)} (commands: wrap, probe; serving is retrysafe-mcp --config <file>)${suggest(first, COMMANDS)}\n`,
  );
  process.exitCode = 2;
} else if (first === 'help' || ours.includes('--help') || ours.includes('-h')) {
  process.stdout.write(`${helpText([SERVE_COMMAND, WRAP_COMMAND, PROBE_COMMAND])}\n`);
} else if (ours.includes('--version') || ours.includes('-V')) {
  process.stdout.write(`${pkg.version}\n`);
} else {
  const name = first === 'wrap' || first === 'probe' ? first : 'serve';
  // A host or terminal that is gone (EPIPE, EIO) must not crash the process mid-stop through an unhandled 'error': the
  // end of its stdin, or a signal, stops it in order, its upstream and ledger with it.
  for (const out of [process.stdout, process.stderr]) out.on('error', () => undefined);
  try {
    // Loaded on use: --help and usage errors answer without loading the ledgers and adapters. The command parses its
    // options again, as it does when called from the retrysafe CLI. A probe loads only what talks to its server.
    const command: CliCommand = { serve: SERVE_COMMAND, wrap: WRAP_COMMAND, probe: PROBE_COMMAND }[name];
    parseOptions(name === 'serve' ? args : rest, command);
    if (name === 'probe') process.exitCode = (await (await import('./probe.js')).runProbe(rest)).exit;
    else {
      const commands = await import('./commands.js');
      // Serving returns once stopped; its stdin, still read, would keep the process running.
      process.exit(await (name === 'wrap' ? commands.runWrap(rest) : commands.runServe(args)));
    }
  } catch (e) {
    const code = String((e as { code?: unknown } | null)?.code);
    // A driver's or the upstream's message may quote a credential or an address: scrubbed as receipts are. Not the
    // config checks' own: they name places, never values, and scrubbing their advice garbles it.
    const own = code === 'RETRYSAFE_FENCE_CONFIG' || code === 'RETRYSAFE_CONFIG';
    const text = String((e as Error)?.message ?? e);
    const message = own ? text : (await import('@retrysafe/core/internal')).createRedactor().text(text);
    process.stderr.write(`retrysafe-mcp${name === 'serve' ? '' : ` ${name}`}: ${message}\n`);
    // A runner's refusal at start, a fenced tool the upstream does not list and a server that cannot be started are
    // bad config too. 1 is probe's "duplicates": a probe that could not run exits 2.
    const usage = e instanceof UsageError || name === 'probe' || CONFIG_CODES.includes(code);
    process.exit(usage ? 2 : 1);
  }
}
