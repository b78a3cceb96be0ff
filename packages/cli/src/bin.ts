#!/usr/bin/env node
import { main } from './cli.js';

// Node 22 calls node:sqlite, which the embedded ledger runs on, experimental and says so on stderr in
// every run: a notice the user can do nothing about. Every other warning still prints.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
  if (type === 'ExperimentalWarning' && String(warning).startsWith('SQLite')) return;
  (emitWarning as (...a: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

process.exitCode = await main(process.argv.slice(2));
