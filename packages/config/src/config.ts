import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { RetrysafeError, type AdapterV1, type Ledger } from '@retrysafe/contract';
import type { PolicyOverrides } from '@retrysafe/core';
import { findInlineCredentials, looksLikeEnvName, safeMessage } from './credentials.js';

const marker = Symbol.for('retrysafe.error.ConfigError');

/** The config file is missing, malformed, names an unknown adapter, or carries a credential inline. */
export class ConfigError extends RetrysafeError {
  readonly [marker] = true;
  readonly path: string;
  constructor(path: string, message: string) {
    super('RETRYSAFE_CONFIG', `${path ? path + ': ' : ''}${message}`);
    this.path = path;
  }
  static override isInstance = (v: unknown): v is ConfigError => typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[marker] === true;
}

export interface StripeConfig { readonly baseUrl?: string; readonly apiKeyEnv: string; readonly timeoutMs?: number }
export interface MsGraphConfig { readonly baseUrl?: string; readonly accessTokenEnv: string; readonly timeoutMs?: number }
export interface HubSpotConfig { readonly baseUrl?: string; readonly accessTokenEnv: string; readonly timeoutMs?: number; readonly searchSettleMs?: number | null }
export interface SandboxConfig { readonly baseUrl: string; readonly timeoutMs?: number; readonly behaviour?: Record<string, unknown> }
/** Any other adapter: a module exporting a factory `(options) => AdapterV1`. */
export interface ModuleAdapterConfig { readonly module: string; readonly export?: string; readonly options?: Record<string, unknown>; readonly secretsFromEnv?: Record<string, string> }

export interface RetrysafeConfig {
  /** A SQLite file path (default `./retrysafe.db`) or a `postgres://` URL. */
  readonly ledger: string;
  /** JSONL file for handoff packets (optional). */
  readonly handoffs?: string;
  readonly policy?: PolicyOverrides;
  readonly redact?: { readonly fields?: readonly string[] };
  readonly adapters: {
    readonly stripe?: StripeConfig;
    readonly msgraph?: MsGraphConfig;
    readonly hubspot?: HubSpotConfig;
    readonly sandbox?: SandboxConfig;
    readonly [name: string]: StripeConfig | MsGraphConfig | HubSpotConfig | SandboxConfig | ModuleAdapterConfig | undefined;
  };
  /** Operations to expose (e.g. to an agent), as `<adapter>.<operation>`; default: all of every configured adapter. */
  readonly operations?: readonly string[];
  /** Directory the file was read from; relative paths resolve against it. */
  readonly baseDir: string;
}

/** Parses and checks a config object; every problem is reported at once. */
export function parseConfig(raw: unknown, baseDir = process.cwd(), source = 'config'): RetrysafeConfig {
  const problems: string[] = [];
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(source, 'expected an object with { ledger, adapters }');
  const o = raw as Record<string, unknown>;
  problems.push(...findInlineCredentials(o));
  const ledger = o.ledger ?? './retrysafe.db';
  if (typeof ledger !== 'string' || !ledger) problems.push('ledger: expected a SQLite path or a postgres:// URL');
  if (!o.adapters || typeof o.adapters !== 'object') problems.push('adapters: expected an object naming at least one adapter');
  const adapters = (o.adapters ?? {}) as Record<string, Record<string, unknown>>;
  for (const [name, a] of Object.entries(adapters)) {
    if (!a || typeof a !== 'object') { problems.push(`adapters.${name}: expected an object`); continue; }
    const need = (field: string) => { if (typeof a[field] !== 'string' || !a[field]) problems.push(`adapters.${name}.${field}: required`); };
    if (name === 'stripe') need('apiKeyEnv');
    else if (name === 'msgraph' || name === 'hubspot') need('accessTokenEnv');
    else if (name === 'sandbox') need('baseUrl');
    else need('module');
  }
  if (o.operations !== undefined && (!Array.isArray(o.operations) || !o.operations.every((x) => typeof x === 'string'))) problems.push('operations: expected an array of "<adapter>.<operation>" strings');
  if (problems.length) throw new ConfigError(source, problems.join('; '));
  return { ...(o as object), ledger: ledger as string, adapters: adapters as unknown as RetrysafeConfig['adapters'], baseDir } as RetrysafeConfig;
}

/** Reads a `.json`, `.yaml` or `.yml` config file. */
export function loadConfig(file: string): RetrysafeConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, `cannot read: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (e) {
    throw new ConfigError(file, `not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${safeMessage((e as Error).message)}`);
  }
  return parseConfig(raw, dirname(resolve(file)), file);
}

function env(name: string, path: string, environment: NodeJS.ProcessEnv): string {
  if (!looksLikeEnvName(name)) throw new ConfigError(path, 'expected the NAME of an environment variable (the value given is not shown)');
  const v = environment[name];
  if (!v) throw new ConfigError(path, `environment variable ${name} is not set`);
  return v;
}

/** Builds the configured adapters (each adapter package is imported only when configured). */
export async function createAdapters(config: RetrysafeConfig, environment: NodeJS.ProcessEnv = process.env): Promise<Record<string, AdapterV1>> {
  const out: Record<string, AdapterV1> = {};
  for (const [name, c] of Object.entries(config.adapters)) {
    if (!c) continue;
    const path = `adapters.${name}`;
    if (name === 'stripe') {
      const s = c as StripeConfig;
      const { createStripeAdapter } = await import('@retrysafe/stripe');
      out[name] = createStripeAdapter({ apiKey: env(s.apiKeyEnv, path, environment), ...(s.baseUrl ? { baseUrl: s.baseUrl } : {}), ...(s.timeoutMs ? { timeoutMs: s.timeoutMs } : {}) });
    } else if (name === 'msgraph') {
      const s = c as MsGraphConfig;
      const { createMsGraphAdapter } = await import('@retrysafe/msgraph');
      out[name] = createMsGraphAdapter({ accessToken: env(s.accessTokenEnv, path, environment), ...(s.baseUrl ? { baseUrl: s.baseUrl } : {}), ...(s.timeoutMs ? { timeoutMs: s.timeoutMs } : {}) });
    } else if (name === 'hubspot') {
      const s = c as HubSpotConfig;
      const { createHubSpotAdapter } = await import('@retrysafe/hubspot');
      out[name] = createHubSpotAdapter({ accessToken: env(s.accessTokenEnv, path, environment), ...(s.baseUrl ? { baseUrl: s.baseUrl } : {}), ...(s.timeoutMs ? { timeoutMs: s.timeoutMs } : {}), ...(s.searchSettleMs !== undefined ? { searchSettleMs: s.searchSettleMs } : {}) });
    } else if (name === 'sandbox') {
      const s = c as SandboxConfig;
      const { createSandboxAdapter } = await import('@retrysafe/sandbox');
      out[name] = createSandboxAdapter({ baseUrl: s.baseUrl, timeoutMs: s.timeoutMs ?? 5000, behaviour: (s.behaviour ?? { replays: true, retentionMs: 86_400_000, parameterMatching: 'mismatch-error', concurrency: 'rejects-in-progress', lookup: 'get-by-key' }) as never });
    } else {
      const m = c as ModuleAdapterConfig;
      const spec = isAbsolute(m.module) || m.module.startsWith('.') ? resolve(config.baseDir, m.module) : m.module;
      const mod = (await import(spec)) as Record<string, unknown>;
      const factory = mod[m.export ?? 'default'];
      if (typeof factory !== 'function') throw new ConfigError(path, `${m.module} does not export a factory named ${m.export ?? 'default'}`);
      const secrets = Object.fromEntries(Object.entries(m.secretsFromEnv ?? {}).map(([k, v]) => [k, env(v, path, environment)]));
      out[name] = (await factory({ ...(m.options ?? {}), ...secrets })) as AdapterV1;
    }
  }
  return out;
}

/** Opens the configured ledger: `postgres://…` ⇒ PostgreSQL, anything else ⇒ a SQLite file. */
export async function openLedger(location: string, baseDir = process.cwd()): Promise<Ledger> {
  if (/^postgres(ql)?:\/\//.test(location)) {
    const { createPostgresLedger } = await import('@retrysafe/ledger-postgres');
    return createPostgresLedger({ connectionString: location });
  }
  const { createSqliteLedger } = await import('@retrysafe/core');
  return createSqliteLedger({ path: isAbsolute(location) ? location : resolve(baseDir, location) });
}
