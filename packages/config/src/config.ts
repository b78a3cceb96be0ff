import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AdapterV1, type JsonSchema, type Ledger, LedgerError } from '@retrysafe/contract';
import { capProblem } from '@retrysafe/contract/rules';
import { suggest } from '@retrysafe/core/suggest';
import type { HttpAdapterDeclaration } from '@retrysafe/http';
import type {
  AdapterConfig,
  HttpAdapterConfig,
  HttpOperationConfig,
  LedgerLocation,
  ModuleAdapterConfig,
  RetrysafeConfig,
} from './config-types.js';
import { findInlineCredentials, looksLikeEnvName, safeMessage, secretFromEnv } from './credentials.js';
import { ConfigError, readDataFile } from './read-file.js';
import { checkSchema } from './schema-check.js';

/** The config file's JSON Schema: the published schema.json is the one definition, and what `parseConfig` checks. */
export const configSchema = JSON.parse(readFileSync(new URL('../schema.json', import.meta.url), 'utf8')) as JsonSchema;

const DEFAULT_LEDGER = './retrysafe.db';
const POSTGRES_URL = /^postgres(ql)?:\/\/[^/]/i;

/** Why a ledger location is neither a postgres:// URL nor a SQLite file path, or undefined when it is one. */
function ledgerProblem(location: string): string | undefined {
  if (POSTGRES_URL.test(location)) return undefined;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]+):/.exec(location)?.[1];
  // One letter before a colon is a Windows drive (C:\ledgers\a.db), not a scheme. A URL carrying a credential is
  // not quoted back (its own problem says where the credential is).
  if (scheme && scheme.length > 1)
    return `${findInlineCredentials(location).length ? 'the location' : JSON.stringify(location)} is a ${scheme}: URL; a ledger is a postgres:// URL or a SQLite file path${suggest(scheme.toLowerCase(), ['postgres', 'postgresql'])}`;
  if (!location.trim()) return 'the ledger location is empty';
  if (/[\\/]$/.test(location)) return `${safeMessage(JSON.stringify(location))} names a directory, not a SQLite file`;
}

/** Problems beyond the schema's shape; operation names are checked once the adapters are built (`createAdapters`). */
function checkConfig(o: Record<string, unknown>): string[] {
  const problems = checkSchema(o, configSchema);
  const ledger = typeof o.ledger === 'string' && o.ledger ? ledgerProblem(o.ledger) : undefined;
  if (ledger) problems.push(`ledger: ${ledger}`);
  const policy = o.policy as Record<string, unknown> | undefined;
  // The runner's rule and words (a policy giving only one of them is checked against the card's when it runs).
  const cap =
    typeof policy?.baseMs === 'number' && typeof policy.capMs === 'number'
      ? capProblem(policy.baseMs, policy.capMs)
      : null;
  if (cap !== null) problems.push(`policy.capMs: ${cap}`);
  const adapters =
    o.adapters && typeof o.adapters === 'object' && !Array.isArray(o.adapters) ? Object.keys(o.adapters) : [];
  if (o.adapters !== undefined && adapters.length === 0) problems.push('adapters: name at least one adapter');
  const shipped = Object.keys(BUILT_IN);
  for (const name of adapters) {
    const entry = (o.adapters as Record<string, unknown>)[name];
    const close = suggest(name, shipped);
    // A misspelled shipped name (no module, no type): said so, instead of "unknown key … module: required".
    if (!close || shipped.includes(name) || !entry || typeof entry !== 'object' || 'type' in entry || 'module' in entry)
      continue;
    const at = `adapters.${safeMessage(name)}`;
    problems.splice(0, problems.length, ...problems.filter((p) => !p.startsWith(`${at}.`)));
    problems.push(
      `${at}: not a shipped adapter${close} — shipped: ${shipped.join(', ')}; one of your own names its module`,
    );
  }
  for (const [i, entry] of (Array.isArray(o.operations) ? o.operations : []).entries()) {
    const name = String(entry).split('.')[0]!;
    if (typeof entry === 'string' && !adapters.includes(name))
      problems.push(
        `operations[${i}]: "${entry}" starts with "${name}", which is not an adapter in this file${suggest(name, adapters)} (entries are "<adapter name>.<operation>"; adapters: ${adapters.join(', ') || 'none'})`,
      );
  }
  return problems;
}

/** Parses and checks a config object against the published schema; every problem is reported at once. */
export function parseConfig(raw: unknown, baseDir = process.cwd(), source = 'config'): RetrysafeConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new ConfigError(source, 'expected an object with { ledger, adapters }');
  const o = raw as Record<string, unknown>;
  // A fence file is another command's: said in one line rather than as a list of its keys this file does not have.
  if ('tools' in o && !('adapters' in o))
    throw new ConfigError(
      source,
      `a fence file (it names tools, no adapters): fence a server with retrysafe-mcp wrap --config ${source} -- <server command…>`,
    );
  const schema = checkConfig(o);
  // A misspelt `…Env` key (apiKeyEnvv) names a variable, not a credential: its "did you mean" says what is wrong.
  const typos = schema
    .filter((p) => /env\w*: unknown key \(did you mean "\w+Env"\?\)/i.test(p))
    .map((p) => p.split(': ')[0]);
  const problems = [...findInlineCredentials(o).filter((p) => !typos.includes(p.split(': ')[0])), ...schema];
  if (problems.length) throw new ConfigError(source, problems.join('; '));
  const { $schema: _schema, ...rest } = o;
  return { ...rest, ledger: (o.ledger as LedgerLocation | undefined) ?? DEFAULT_LEDGER, baseDir } as RetrysafeConfig;
}

/** What a config file holds: `RetrysafeConfig` before it is read. */
export type RetrysafeConfigInput = Omit<RetrysafeConfig, 'baseDir' | 'ledger'> & {
  readonly ledger?: LedgerLocation;
  readonly $schema?: string;
};

/** Types a `retrysafe.config.ts` (`export default defineConfig({ … })`); `loadConfigFile` checks it at run time. */
export function defineConfig(config: RetrysafeConfigInput): RetrysafeConfigInput {
  return config;
}

/** The variable naming the config file where `--config` is not given: `retrysafe` and `retrysafe-mcp` read it alike. */
export const CONFIG_ENV = 'RETRYSAFE_CONFIG';

const MODULE_CONFIG = /\.(m?js|m?ts|cjs|cts)$/i;

/** Reads a config file: JSON, YAML, or a module (`.js`, `.ts` where the runtime imports TypeScript) exporting it. */
export async function loadConfigFile(file: string): Promise<RetrysafeConfig> {
  if (!MODULE_CONFIG.test(file)) return loadConfig(file);
  const path = resolve(file);
  if (!existsSync(path)) throw new ConfigError(file, 'cannot read: no such file');
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (e) {
    const { code, message } = e as { code?: string; message: string };
    // What Node says when it cannot strip types, and when a package.json makes the file CommonJS.
    const hint =
      code === 'ERR_UNKNOWN_FILE_EXTENSION'
        ? ' (this Node cannot import TypeScript directly: compile it, or run under a loader such as tsx, or Node ≥ 22.18)'
        : /outside a module|Unexpected token 'export'/.test(message)
          ? ' (read as CommonJS: set "type": "module" in the nearest package.json, or name the file .mts or .mjs)'
          : '';
    throw new ConfigError(file, `cannot import: ${safeMessage(message)}${hint}`);
  }
  return parseConfig(mod.default ?? mod.config, dirname(path), file);
}

/** Reads a JSON or YAML config file. */
export function loadConfig(file: string): RetrysafeConfig {
  if (MODULE_CONFIG.test(file))
    throw new ConfigError(file, 'a JavaScript/TypeScript config is read with loadConfigFile() (async)');
  return parseConfig(readDataFile(file), dirname(resolve(file)), file);
}

function env(name: string, path: string, environment: NodeJS.ProcessEnv): string {
  if (!looksLikeEnvName(name))
    throw new ConfigError(path, 'expected the NAME of an environment variable (the value given is not shown)');
  const v = secretFromEnv(name, environment, path);
  if (v === undefined) throw new ConfigError(path, `environment variable ${name} is not set`);
  return v;
}

/** First-party adapters by package (`@retrysafe/<key>`): factory, and the option naming option `secret`'s variable. */
const BUILT_IN: Record<string, { factory: string; secretEnv?: string; secret?: string }> = {
  stripe: { factory: 'createStripeAdapter', secretEnv: 'apiKeyEnv', secret: 'apiKey' },
  msgraph: { factory: 'createMsGraphAdapter', secretEnv: 'accessTokenEnv', secret: 'accessToken' },
  hubspot: { factory: 'createHubSpotAdapter', secretEnv: 'accessTokenEnv', secret: 'accessToken' },
  resend: { factory: 'createResendAdapter', secretEnv: 'apiKeyEnv', secret: 'apiKey' },
  slack: { factory: 'createSlackAdapter', secretEnv: 'tokenEnv', secret: 'token' },
  github: { factory: 'createGitHubAdapter', secretEnv: 'tokenEnv', secret: 'auth' },
  sandbox: { factory: 'createSandboxAdapter' },
};

/** The config's own keys (the schema allows only the factory's), the secret read from its variable. */
async function createBuiltIn(name: string, c: object, path: string, environment: NodeJS.ProcessEnv) {
  const { factory, secretEnv, secret } = BUILT_IN[name]!;
  const mod = await importOptional<Record<string, unknown>>(`@retrysafe/${name}`, path);
  const create = mod[factory] as (options: unknown) => AdapterV1;
  const what = `@retrysafe/${name}'s ${factory}`;
  // A sandbox the config describes no behaviour of is the replaying provider of its drills.
  if (!secretEnv || !secret)
    return built(path, what, [], () => create({ timeoutMs: 5000, behaviour: mod.REPLAYING_BEHAVIOUR, ...c }));
  const { [secretEnv]: variable, ...options } = c as Record<string, unknown>;
  const key = env(variable as string, path, environment);
  return built(path, what, [key], () => create({ ...options, [secret]: key }));
}

/** A factory's refusal names the entry; it was handed the secrets: what it says is passed on without them, scrubbed as
 * foreign text is. */
async function built(path: string, what: string, secrets: readonly string[], make: () => unknown): Promise<AdapterV1> {
  try {
    return (await make()) as AdapterV1;
  } catch (e) {
    let said = e instanceof Error ? e.message : String(e);
    for (const secret of secrets) said = said.split(secret).join('[redacted]');
    throw new ConfigError(path, `${what} failed: ${safeMessage(said)}`);
  }
}

/** Builds the configured adapters, importing only their packages; on a refusal, those built are closed first. */
export async function createAdapters(
  config: RetrysafeConfig,
  environment: NodeJS.ProcessEnv = process.env,
): Promise<Record<string, AdapterV1>> {
  const out: Record<string, AdapterV1> = {};
  try {
    for (const [name, c] of Object.entries(config.adapters))
      if (c) out[name] = await createAdapter(name, c, config, environment);
    exposedOperations(config, out);
    return out;
  } catch (e) {
    await Promise.allSettled(Object.values(out).map(async (a) => a.close?.()));
    throw e;
  }
}

async function createAdapter(
  name: string,
  c: AdapterConfig,
  config: RetrysafeConfig,
  environment: NodeJS.ProcessEnv,
): Promise<AdapterV1> {
  const path = `adapters.${name}`;
  if (Object.hasOwn(BUILT_IN, name)) return createBuiltIn(name, c, path, environment);
  if ((c as HttpAdapterConfig).type === 'http') {
    const declaration = httpDeclarationOf(name, c as HttpAdapterConfig, config.baseDir, environment);
    const http = await importOptional<typeof import('@retrysafe/http')>('@retrysafe/http', path);
    try {
      return http.createHttpAdapterFromDeclaration(declaration as unknown as HttpAdapterDeclaration);
    } catch (e) {
      throw new ConfigError(path, safeMessage((e as Error).message));
    }
  }
  const m = c as ModuleAdapterConfig;
  const file = isAbsolute(m.module) || m.module.startsWith('.');
  const spec = file ? resolve(config.baseDir, m.module) : m.module;
  if (file && !existsSync(spec)) throw new ConfigError(`${path}.module`, `no file ${m.module} (looked for ${spec})`);
  // A module that throws while loading is this entry's fault, said as the config's other problems are.
  const mod = await (file
    ? import(pathToFileURL(spec).href)
    : importOptional<Record<string, unknown>>(spec, `${path}.module`)
  ).catch((e: unknown) => {
    if (ConfigError.isInstance(e)) throw e;
    throw new ConfigError(`${path}.module`, `cannot import ${m.module}: ${safeMessage((e as Error).message)}`);
  });
  const factory = mod[m.export ?? 'default'];
  if (typeof factory !== 'function')
    throw new ConfigError(path, `${m.module} does not export a factory named ${m.export ?? 'default'}`);
  const options = structuredClone(m.options ?? {}) as Record<string, unknown>;
  const secrets: string[] = [];
  for (const [option, variable] of Object.entries(m.secretsFromEnv ?? {})) {
    const secret = env(variable, `${path}.secretsFromEnv.${option}`, environment);
    secrets.push(secret);
    setPath(options, option, secret, `${path}.secretsFromEnv`);
  }
  return built(path, `the factory of ${m.module}`, secrets, () => factory(options));
}

/** Sets `a.b.c` inside `target`, creating objects; refuses to walk through a non-object or a prototype key. */
function setPath(target: Record<string, unknown>, dotted: string, value: string, where: string): void {
  const parts = dotted.split('.');
  if (parts.some((p) => !p || p === '__proto__' || p === 'constructor' || p === 'prototype'))
    throw new ConfigError(where, `${JSON.stringify(dotted)} is not an option path`);
  let cur = target;
  for (const [i, p] of parts.slice(0, -1).entries()) {
    const next = Object.hasOwn(cur, p) ? cur[p] : undefined;
    if (next === undefined) cur = cur[p] = {} as Record<string, unknown>;
    else if (next && typeof next === 'object' && !Array.isArray(next)) cur = next as Record<string, unknown>;
    else throw new ConfigError(where, `${dotted}: options.${parts.slice(0, i + 1).join('.')} is not an object`);
  }
  cur[parts.at(-1)!] = value;
}

/** The `operations` entries as `<provider>.<operation>` (undefined: every operation is exposed); each must name an
 * operation of its adapter (a typo is an error, not zero tools). */
export function exposedOperations(config: RetrysafeConfig, adapters: Record<string, AdapterV1>): string[] | undefined {
  const problems: string[] = [];
  const names = config.operations?.map((entry, i) => {
    const name = entry.split('.')[0]!;
    const op = entry.slice(name.length + 1);
    const adapter = adapters[name];
    const known = adapter ? Object.keys(adapter.operations) : [op]; // parseConfig reported a missing adapter
    if (!known.includes(op))
      problems.push(
        `operations[${i}]: ${name} has no operation "${op}"${suggest(op, known)} (known: ${known.join(', ')})`,
      );
    return `${adapter?.provider}.${op}`;
  });
  if (problems.length) throw new ConfigError('config', problems.join('; '));
  return names;
}

/** The declaration `@retrysafe/http` takes: cards read, header credentials from the environment. */
export function httpDeclarationOf(
  name: string,
  c: HttpAdapterConfig,
  baseDir: string,
  environment: NodeJS.ProcessEnv = process.env,
) {
  const path = `adapters.${name}`;
  const headers: Record<string, string> = { ...(c.headers ?? {}) };
  for (const [header, variable] of Object.entries(c.headersFromEnv ?? {}))
    headers[header] = env(variable, `${path}.headersFromEnv.${header}`, environment);
  const operations: Record<string, HttpOperationConfig> = {};
  for (const [op, d] of Object.entries(c.operations)) {
    let card = d.card;
    try {
      if (typeof card === 'string') card = readDataFile(resolve(baseDir, card)) as Record<string, unknown>;
    } catch (e) {
      throw ConfigError.isInstance(e) ? new ConfigError(`${path}.operations.${op}.card`, e.message) : e;
    }
    operations[op] = { ...d, card };
  }
  return {
    provider: c.provider ?? name,
    ...(c.account !== undefined ? { account: c.account } : {}),
    baseUrl: c.baseUrl,
    timeoutMs: c.timeoutMs,
    ...(Object.keys(headers).length ? { headers } : {}),
    operations,
  };
}

/** Imports an optional peer package, or says which one to install. */
async function importOptional<T>(pkg: string, where: string): Promise<T> {
  try {
    return (await import(pkg)) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes(pkg))
      throw new ConfigError(where, `needs ${pkg}: install it next to @retrysafe/config`);
    throw e;
  }
}

/** A ledger that is named but cannot be used is a ConfigError, never a fresh default ledger; one another process holds
 * locked is a busy LedgerError. */
export async function openLedger(location: LedgerLocation, baseDir = process.cwd()): Promise<Ledger> {
  if (typeof location !== 'string') {
    const { createDynamoDbLedger } = await importOptional<typeof import('@retrysafe/ledger-dynamodb')>(
      '@retrysafe/ledger-dynamodb',
      'ledger',
    );
    return createDynamoDbLedger(location.dynamodb);
  }
  const problem = ledgerProblem(location);
  if (problem) throw new ConfigError('ledger', problem);
  if (POSTGRES_URL.test(location)) {
    const { createPostgresLedger } = await importOptional<typeof import('@retrysafe/ledger-postgres')>(
      '@retrysafe/ledger-postgres',
      'ledger',
    );
    return createPostgresLedger({ connectionString: location });
  }
  const path = resolve(baseDir, location);
  if (!existsSync(dirname(path)))
    throw new ConfigError(
      'ledger',
      `the directory of ${path} does not exist (a SQLite ledger file is created, its directory is not)`,
    );
  if (existsSync(path) && statSync(path).isDirectory())
    throw new ConfigError('ledger', `${path} is a directory, not a SQLite file`);
  const { createSqliteLedger } = await import('@retrysafe/ledger-sqlite');
  try {
    return createSqliteLedger({ path });
  } catch (e) {
    // Held locked by another process: the location is right and the ledger busy, not a config error.
    if (LedgerError.isInstance(e) && e.reason === 'busy') throw e;
    throw new ConfigError('ledger', `cannot open the SQLite ledger ${path}: ${safeMessage((e as Error).message)}`);
  }
}
