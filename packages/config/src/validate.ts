import { readFileSync } from 'node:fs';
import type { JsonSchema } from '@retrysafe/contract';
import { checkSchema, suggest } from './schema-check.js';

/** The config file's JSON Schema: the published schema.json is the one definition, and what `parseConfig` checks. */
export const configSchema = JSON.parse(readFileSync(new URL('../schema.json', import.meta.url), 'utf8')) as JsonSchema;

export const DEFAULT_LEDGER = './retrysafe.db';
export const POSTGRES_URL = /^postgres(ql)?:\/\/[^/]/i;

/** Why a ledger location is neither a postgres:// URL nor a SQLite file path, or undefined when it is one. */
export function ledgerProblem(location: string): string | undefined {
  if (POSTGRES_URL.test(location)) return undefined;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]+):/.exec(location)?.[1];
  // One letter before a colon is a Windows drive (C:\ledgers\a.db), not a scheme.
  if (scheme && scheme.length > 1)
    return `${JSON.stringify(location)} is a ${scheme}: URL; a ledger is a postgres:// URL or a SQLite file path${suggest(scheme.toLowerCase(), ['postgres', 'postgresql'])}`;
  if (!location.trim()) return 'the ledger location is empty';
  if (/[\\/]$/.test(location)) return `${JSON.stringify(location)} names a directory, not a SQLite file`;
}

/** Problems beyond the schema's shape; operation names are checked once the adapters are built (`createAdapters`). */
export function checkConfig(o: Record<string, unknown>): string[] {
  const problems = checkSchema(o, configSchema);
  const ledger = typeof o.ledger === 'string' && o.ledger ? ledgerProblem(o.ledger) : undefined;
  if (ledger) problems.push(`ledger: ${ledger}`);
  const policy = o.policy as Record<string, unknown> | undefined;
  if (policy && typeof policy.capMs === 'number' && typeof policy.baseMs === 'number' && policy.capMs < policy.baseMs)
    problems.push(`policy.capMs: the backoff cap (${policy.capMs}) is below its base (${policy.baseMs})`);
  const adapters =
    o.adapters && typeof o.adapters === 'object' && !Array.isArray(o.adapters) ? Object.keys(o.adapters) : [];
  if (o.adapters !== undefined && adapters.length === 0) problems.push('adapters: name at least one adapter');
  for (const [i, entry] of (Array.isArray(o.operations) ? o.operations : []).entries()) {
    const name = String(entry).split('.')[0]!;
    if (typeof entry === 'string' && !adapters.includes(name))
      problems.push(
        `operations[${i}]: "${entry}" starts with "${name}", which is not an adapter in this file${suggest(name, adapters)} (entries are "<adapter name>.<operation>"; adapters: ${adapters.join(', ') || 'none'})`,
      );
  }
  return problems;
}
