import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { problemsOf } from '../test/problems.js';
import {
  createAdapters,
  defineConfig,
  exposedOperations,
  loadConfig,
  loadConfigFile,
  openLedger,
  parseConfig,
} from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-config-strict-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const problems = (raw: unknown) => problemsOf(raw, dir);
const stripe = { stripe: { apiKeyEnv: 'STRIPE_KEY', baseUrl: 'http://127.0.0.1:9' } };

// A module adapter whose provider name differs from its key in the config, and that echoes its options.
writeFileSync(
  join(dir, 'acme.mjs'),
  `export default (options) => ({ specificationVersion: 'v1', provider: 'acme-corp', options, operations: { 'tickets.create': {}, 'tickets.close': {} } });\n`,
);

describe('strict config (fails on main: these were accepted or defaulted)', () => {
  it('a misspelled top-level key is an error with a suggestion, not a default ledger', () => {
    const m = problems({ ledgr: 'postgres://db.internal/retrysafe', adapters: stripe });
    expect(m).toContain('ledgr: unknown key (did you mean "ledger"?)');
  });

  it('misspelled adapter fields and policy keys are named, with the close key', () => {
    const m = problems({ adapters: { stripe: { apiKeyEnv: 'K', timoutMs: 5000 } }, policy: { maxAtempts: 3 } });
    expect(m).toContain('adapters.stripe.timoutMs: unknown key (did you mean "timeoutMs"?)');
    expect(m).toContain('policy.maxAtempts: unknown key (did you mean "maxAttempts"?)');
  });

  it('a misspelt *Env key is a typo, said once: not refused as an inline credential', () => {
    const m = problems({ adapters: { stripe: { apiKeyEnvv: 'STRIPE_API_KEY' } } });
    expect(m).toContain('adapters.stripe.apiKeyEnvv: unknown key (did you mean "apiKeyEnv"?)');
    expect(m).not.toMatch(/credential/);
    // A credential under a key that is no *Env key is still refused as one.
    expect(problems({ adapters: { stripe: { apiKey: 'STRIPE_API_KEY' } } })).toMatch(/apiKey: credentials come/);
  });

  it('a misspelled shipped adapter is named as one, with the close name (not read as a module adapter)', () => {
    const m = problems({ adapters: { strpe: { apiKeyEnv: 'STRIPE_KEY' } } });
    expect(m).toContain(
      'adapters.strpe: not a shipped adapter (did you mean "stripe"?) — shipped: stripe, msgraph, hubspot, resend, slack, github, sandbox; one of your own names its module',
    );
    expect(m).not.toMatch(/module: required|unknown key/);
  });

  it('bad policy values are refused', () => {
    const m = problems({ adapters: stripe, policy: { maxAttempts: 0, baseMs: -5, leaseMs: 'long', capMs: 1.5 } });
    expect(m).toContain('policy.maxAttempts: must be ≥ 1');
    expect(m).toContain('policy.baseMs: must be ≥ 0');
    expect(m).toContain('policy.leaseMs: expected number, got string "long"');
    expect(problems({ adapters: stripe, policy: { maxAttempts: 2.5 } })).toContain(
      'policy.maxAttempts: expected integer',
    );
    expect(problems({ adapters: stripe, policy: { baseMs: 500, capMs: 100 } })).toContain(
      'policy.capMs: the backoff cap (100) is below its base (500)',
    );
  });

  it('a backoff cap below its base is refused in the words the runner refuses it with, naming policy.capMs', async () => {
    const { resolvePolicy } = await import('@retrysafe/core/internal');
    const { REPLAYING_BEHAVIOUR, sandboxCreateCard } = await import('@retrysafe/sandbox');
    const policy = { baseMs: 500, capMs: 100 };
    let runner = '';
    try {
      resolvePolicy(sandboxCreateCard(REPLAYING_BEHAVIOUR), policy);
    } catch (e) {
      runner = (e as Error).message;
    }
    expect(runner).toMatch(/^policy\.capMs: /);
    expect(problems({ adapters: stripe, policy })).toBe(`config: ${runner}`);
  });

  it('a ledger that is named but unusable is refused, never replaced by ./retrysafe.db', async () => {
    expect(problems({ ledger: 'mysql://db/retrysafe', adapters: stripe })).toMatch(
      /^config: ledger: "mysql:\/\/db\/retrysafe" is a mysql: URL/,
    );
    expect(problems({ ledger: 'postgress://db/retrysafe', adapters: stripe })).toContain('(did you mean "postgres"?)');
    expect(problems({ ledger: '', adapters: stripe })).toContain('ledger: must not be empty');
    expect(problems({ ledger: 42, adapters: stripe })).toContain('ledger: expected string');
    await expect(openLedger('./no-such-dir/l.db', dir)).rejects.toThrow(
      /ledger: the directory of .*no-such-dir.* does not exist/,
    );
    mkdirSync(join(dir, 'a-dir'), { recursive: true });
    await expect(openLedger('a-dir', dir)).rejects.toThrow(/is a directory, not a SQLite file/);
    // Absent ⇒ the documented default.
    expect(parseConfig({ adapters: stripe }, dir).ledger).toBe('./retrysafe.db');
  });

  it('an operations entry must start with an adapter name from the file', () => {
    expect(problems({ adapters: stripe, operations: ['strpe.paymentIntents.create'] })).toContain(
      'operations[0]: "strpe.paymentIntents.create" starts with "strpe", which is not an adapter in this file (did you mean "stripe"?)',
    );
  });

  it('a misspelled operation is an error (not 0 tools), matched against the config key the docs show', async () => {
    const cfg = parseConfig(
      { adapters: { acme: { module: './acme.mjs' } }, operations: ['acme.tickets.create', 'acme.tikets.close'] },
      dir,
    );
    await expect(createAdapters(cfg, {})).rejects.toThrow(
      /operations\[1\]: acme has no operation "tikets.close" \(did you mean "tickets.close"\?\)/,
    );
    // said once, as every other problem of the file is ("config: …"), not "operations: operations[1]: …"
    await expect(createAdapters(cfg, {})).rejects.toThrow(/^config: operations\[1\]: /);
    const ok = parseConfig({ adapters: { acme: { module: './acme.mjs' } }, operations: ['acme.tickets.create'] }, dir);
    const adapters = await createAdapters(ok, {});
    // the config says acme.…, the tools are named by the provider
    expect(exposedOperations(ok, adapters)).toEqual(['acme-corp.tickets.create']);
  });

  it('secretsFromEnv with a dotted key sets the nested option (fails on main: it set a key named "headers.Authorization")', async () => {
    const cfg = parseConfig(
      {
        adapters: {
          acme: {
            module: './acme.mjs',
            options: { baseUrl: 'http://127.0.0.1:9', headers: { Accept: 'application/json' } },
            secretsFromEnv: { 'headers.Authorization': 'ACME_AUTH', token: 'ACME_TOKEN' },
          },
        },
      },
      dir,
    );
    const { acme } = (await createAdapters(cfg, { ACME_AUTH: 'Bearer from-env', ACME_TOKEN: 't' })) as unknown as {
      acme: { options: Record<string, unknown> };
    };
    expect(acme.options).toEqual({
      baseUrl: 'http://127.0.0.1:9',
      headers: { Accept: 'application/json', Authorization: 'Bearer from-env' },
      token: 't',
    });
    expect(cfg.adapters.acme).toMatchObject({ options: { headers: { Accept: 'application/json' } } }); // the parsed config is not mutated
    await expect(createAdapters(cfg, { ACME_TOKEN: 't' })).rejects.toThrow(
      /adapters\.acme\.secretsFromEnv\.headers\.Authorization: environment variable ACME_AUTH is not set/,
    );
    const bad = parseConfig(
      {
        adapters: {
          acme: {
            module: './acme.mjs',
            options: { headers: 'x' },
            secretsFromEnv: { 'headers.Authorization': 'ACME_AUTH' },
          },
        },
      },
      dir,
    );
    await expect(createAdapters(bad, { ACME_AUTH: 'a' })).rejects.toThrow(/options\.headers is not an object/);
    const proto = parseConfig(
      { adapters: { acme: { module: './acme.mjs', secretsFromEnv: { '__proto__.polluted': 'ACME_AUTH' } } } },
      dir,
    );
    await expect(createAdapters(proto, { ACME_AUTH: 'a' })).rejects.toThrow(/is not an option path/);
  });

  it('accepts $schema', () => {
    expect(() =>
      parseConfig({ $schema: './node_modules/@retrysafe/config/schema.json', adapters: stripe }, dir),
    ).not.toThrow();
  });

  it('defineConfig types a TypeScript config, which loadConfigFile checks like any other', async () => {
    const typed = defineConfig({
      ledger: './l.db',
      adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } },
      policy: { maxAttempts: 3 },
    });
    expect(parseConfig(typed, dir).policy).toEqual({ maxAttempts: 3 });
    // @ts-expect-error — a misspelled key fails to compile
    defineConfig({ ledgr: './l.db', adapters: {} });
    writeFileSync(
      join(dir, 'retrysafe.config.ts'),
      `export default { ledger: './x.db', adapters: { stripe: { apiKeyEnv: 'K', timoutMs: 1 } } };\n`,
    );
    await expect(loadConfigFile(join(dir, 'retrysafe.config.ts'))).rejects.toThrow(
      /timoutMs: unknown key \(did you mean "timeoutMs"\?\)/,
    );
    writeFileSync(
      join(dir, 'retrysafe.config.mjs'),
      `export default { ledger: './x.db', adapters: { stripe: { apiKeyEnv: 'K' } } };\n`,
    );
    expect((await loadConfigFile(join(dir, 'retrysafe.config.mjs'))).baseDir).toBe(dir);
    expect(() => loadConfig(join(dir, 'retrysafe.config.mjs'))).toThrow(/loadConfigFile/);
  });
});
