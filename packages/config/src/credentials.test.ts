import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, createAdapters, loadConfig, parseConfig } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-config-cred-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const mod = (options: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  ledger: 'x.db',
  adapters: { custom: { module: './adapter.js', options, ...extra } },
});

/** The ConfigError parseConfig throws for `raw` (fails the test when it does not throw). */
function refusal(raw: unknown): string {
  try {
    parseConfig(raw, dir);
  } catch (e) {
    expect(ConfigError.isInstance(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('config: inline credentials are refused by key, by value and inside URLs, never echoed', () => {
  const SECRET = 'hunter2-Zq8vLw';
  it.each<[string, unknown, RegExp]>([
    [
      'apiToken',
      mod({ apiToken: SECRET }),
      /adapters\.custom\.options\.apiToken: credentials come from environment variables/,
    ],
    ['bearerToken', mod({ bearerToken: SECRET }), /options\.bearerToken/],
    ['privateKey', mod({ privateKey: SECRET }), /options\.privateKey/],
    ['auth', mod({ auth: { user: 'u', pass: SECRET } }), /options\.auth/],
    ['credentials.pass', mod({ credentials: { pass: SECRET } }), /options\.credentials/],
    ['"apiKey " with a trailing space', mod({ 'apiKey ': SECRET }), /options\["apiKey "\]/],
    ['headers["X-Api-Key"]', mod({ headers: { 'X-Api-Key': SECRET } }), /options\.headers\["X-Api-Key"\]/],
    [
      'a Stripe key under an innocent name',
      mod({ label: `sk_live_${SECRET}` }),
      /options\.label: looks like a credential \(Stripe key/,
    ],
    [
      'an AWS key id',
      mod({ region: 'eu', id: `AKIA${'ABCDEFGHIJKLMNOP'}` }),
      /options\.id: looks like a credential \(AWS/,
    ],
    [
      'a postgres URL with a password',
      { ledger: `postgres://app:${SECRET}@db.internal/rs`, adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } } },
      /ledger: the URL carries a password: .*PGPASSWORD/,
    ],
    [
      'a baseUrl with user:pass',
      {
        ledger: 'x.db',
        adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY', baseUrl: `https://u:${SECRET}@api.example/` } },
      },
      /adapters\.stripe\.baseUrl: the URL carries user:password/,
    ],
    [
      'a baseUrl with ?key=',
      { ledger: 'x.db', adapters: { sandbox: { baseUrl: `https://api.example/v1?key=${SECRET}` } } },
      /adapters\.sandbox\.baseUrl: the URL's query parameter 'key' carries a credential/,
    ],
    [
      'a baseUrl with ?access_token=',
      mod({ baseUrl: `https://api.example/?a=1&access_token=${SECRET}` }),
      /query parameter 'access_token'/,
    ],
    [
      'a secret typed where an env-var name belongs',
      { ledger: 'x.db', adapters: { stripe: { apiKeyEnv: `sk_live_${SECRET}` } } },
      /apiKeyEnv: expected the NAME of an environment variable .*looks like a credential/,
    ],
    [
      'a non-name in accessTokenEnv',
      { ledger: 'x.db', adapters: { hubspot: { accessTokenEnv: `pat ${SECRET}` } } },
      /accessTokenEnv: expected the NAME of an environment variable/,
    ],
    [
      'a non-name in secretsFromEnv',
      mod({}, { secretsFromEnv: { apiToken: `Bearer ${SECRET}` } }),
      /secretsFromEnv\.apiToken: expected the NAME/,
    ],
    [
      'a postgres URL with a password, in a list where a string belongs',
      { ledger: [`postgres://app:${SECRET}@db.internal/rs`], adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } } },
      /ledger: expected string or object, got (array )?the value \(not shown\)/,
    ],
    [
      'a Stripe key in an object where a string belongs',
      { ledger: 'x.db', handoffs: { path: `sk_live_${SECRET}` }, adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } } },
      /handoffs: expected string, got object the value \(not shown\)/,
    ],
    [
      'an email address in a list where a number belongs',
      { ledger: 'x.db', policy: { maxAttempts: [`${SECRET}@example.com`] }, adapters: { sandbox: {} } },
      /policy\.maxAttempts: expected integer, got array the value \(not shown\)/,
    ],
  ])('%s', (_label, raw, expected) => {
    const message = refusal(raw);
    expect(message).toMatch(expected);
    expect(message).not.toContain(SECRET);
    expect(message).not.toContain('ABCDEFGHIJKLMNOP');
  });

  it('accepts what is not a credential: env-var names, a postgres URL with a user only, plain base URLs, redact field names', () => {
    const ok = parseConfig(
      {
        ledger: 'postgres://postgres@127.0.0.1:54329/retrysafe',
        redact: { fields: ['password', 'customer.email'] },
        adapters: {
          stripe: { apiKeyEnv: 'STRIPE_API_KEY', baseUrl: 'http://127.0.0.1:12111/v1?mode=test' },
          custom: {
            module: './a.js',
            options: { region: 'eu', pageSize: 50 },
            secretsFromEnv: { apiToken: 'ACME_TOKEN' },
          },
        },
      },
      dir,
    );
    expect(ok.ledger).toBe('postgres://postgres@127.0.0.1:54329/retrysafe');
  });

  it('a credential written as a key (a pasted token, a misplaced colon) is not repeated in the path an error names', () => {
    const token = `xoxb-1234-5678-${SECRET}`;
    const cases = [
      { ledger: 'x.db', adapters: { slack: { tokenEnv: 'SLACK_TOKEN', timeoutMs: 1000, [token]: 1 } } },
      { ledger: 'x.db', adapters: { slack: { tokenEnv: 'SLACK_TOKEN', timeoutMs: 1000 } }, [`sk_live_${SECRET}`]: 1 },
      mod({ headers: { [`Bearer ${SECRET}`]: `sk_live_${SECRET}` } }),
    ];
    for (const raw of cases) expect(refusal(raw)).not.toContain(SECRET);
  });

  it('a config file whose JSON is broken near a secret does not quote it in the parse error', () => {
    const f = join(dir, 'broken.json');
    writeFileSync(f, `{"ledger": "postgres://app:${SECRET}@db/x" "adapters": {}}`);
    expect(() => loadConfig(f)).toThrow(ConfigError);
    try {
      loadConfig(f);
    } catch (e) {
      expect((e as Error).message).not.toContain(SECRET);
    }
  });

  it('createAdapters never echoes a value given where a variable name belongs', async () => {
    const cfg = { ledger: 'x.db', baseDir: dir, adapters: { stripe: { apiKeyEnv: `sk_live_${SECRET}` } } } as never;
    await expect(createAdapters(cfg, {})).rejects.toThrow(/expected the NAME of an environment variable/);
    await createAdapters(cfg, {}).catch((e: Error) => expect(e.message).not.toContain(SECRET));
  });
});

describe('createAdapters: a factory that fails never passes on the secrets it was given', () => {
  it('a module factory quoting its token (from secretsFromEnv) in its error: a ConfigError without the token', async () => {
    const TOKEN = 'acme-tok-91f3c7d2e8';
    writeFileSync(
      join(dir, 'quoting.mjs'),
      'export default (o) => { throw new Error("acme: token " + o.auth.token + " was refused (region " + o.region + ")"); };\n',
    );
    const cfg = parseConfig(
      {
        adapters: {
          acme: { module: './quoting.mjs', options: { region: 'eu' }, secretsFromEnv: { 'auth.token': 'ACME_TOKEN' } },
        },
      },
      dir,
    );
    const err = (await createAdapters(cfg, { ACME_TOKEN: TOKEN }).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/adapters\.acme: .*was refused \(region eu\)/);
    expect(err.message).not.toContain(TOKEN);
    expect(ConfigError.isInstance(err)).toBe(true);
  });
});

describe('createAdapters: a module adapter whose file is not there', () => {
  it('is a ConfigError naming the entry and the file (a config names a file the reader has not made yet)', async () => {
    const cfg = parseConfig({ adapters: { acme: { module: './acme-adapter.mjs', export: 'createAcmeAdapter' } } }, dir);
    const err = (await createAdapters(cfg, {}).catch((e: unknown) => e)) as Error;
    expect(ConfigError.isInstance(err)).toBe(true);
    expect(err.message).toMatch(/adapters\.acme\.module: .*acme-adapter\.mjs/);
  });

  it('a module that is there but imports what is not installed keeps its own error', async () => {
    writeFileSync(join(dir, 'needs.mjs'), "import 'no-such-package-rs';\nexport default () => ({});\n");
    const cfg = parseConfig({ adapters: { acme: { module: './needs.mjs' } } }, dir);
    const err = (await createAdapters(cfg, {}).catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('no-such-package-rs');
  });
});

describe('createAdapters: a variable name that is an inherited property of the environment object', () => {
  it.each(['constructor', 'toString', 'valueOf', '__proto__'])(
    '%s, unset, is "not set" (ConfigError), never a function passed on as the secret',
    async (name) => {
      const cfg = parseConfig({ adapters: { stripe: { apiKeyEnv: name } } }, dir);
      const err = await createAdapters(cfg, { ...process.env }).catch((e: unknown) => e);
      expect(ConfigError.isInstance(err)).toBe(true);
      expect((err as Error).message).toMatch(new RegExp(`environment variable ${name} is not set`));
    },
  );
});

describe('createAdapters: a secret that cannot travel in an HTTP header', () => {
  // A CRLF .env leaves `\r` on the value: the SDK then fails before sending, which read as an unknown outcome.
  it.each(['sk_test_Crlf42\r', ' sk_test_Crlf42', 'sk_test_Crlf42\n', '   '])(
    '%j is refused before any adapter is built, naming the variable and not the value',
    async (value) => {
      const cfg = parseConfig({ adapters: { stripe: { apiKeyEnv: 'RS_TEST_KEY' } } }, dir);
      const err = await createAdapters(cfg, { RS_TEST_KEY: value }).catch((e: unknown) => e);
      expect(ConfigError.isInstance(err)).toBe(true);
      expect((err as Error).message).toMatch(/RS_TEST_KEY .*whitespace or control characters/);
      expect((err as Error).message).not.toContain('Crlf42');
    },
  );
});
