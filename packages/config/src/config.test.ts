import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, createAdapters, loadConfig, openLedger, parseConfig } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('config', () => {
  it('loads YAML and JSON alike', () => {
    writeFileSync(
      join(dir, 'a.yaml'),
      'ledger: ./l.db\nadapters:\n  stripe:\n    apiKeyEnv: STRIPE_KEY\n    baseUrl: http://127.0.0.1:1\noperations: [stripe.paymentIntents.create]\n',
    );
    writeFileSync(
      join(dir, 'a.json'),
      JSON.stringify({
        ledger: './l.db',
        adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY', baseUrl: 'http://127.0.0.1:1' } },
        operations: ['stripe.paymentIntents.create'],
      }),
    );
    const { baseDir: _a, ...y } = loadConfig(join(dir, 'a.yaml'));
    const { baseDir: _b, ...j } = loadConfig(join(dir, 'a.json'));
    expect(y).toEqual(j);
  });

  it('refuses credentials written in the file, naming every one', () => {
    try {
      parseConfig({
        ledger: 'x.db',
        adapters: {
          stripe: { apiKeyEnv: 'K', apiKey: 'sk_test_inline' },
          hubspot: { accessTokenEnv: 'H', accessToken: 'pat' },
        },
      });
      expect.unreachable();
    } catch (e) {
      expect(ConfigError.isInstance(e)).toBe(true);
      expect((e as Error).message).toContain('adapters.stripe.apiKey');
      expect((e as Error).message).toContain('adapters.hubspot.accessToken');
      expect((e as Error).message).not.toContain('sk_test_inline');
    }
  });

  it('reports every missing field at once', () => {
    expect(() => parseConfig({ adapters: { stripe: {}, msgraph: {}, custom: {} } })).toThrow(
      /adapters\.stripe\.apiKeyEnv.*adapters\.msgraph\.accessTokenEnv.*adapters\.custom\.module/,
    );
    expect(() => loadConfig(join(dir, 'missing.json'))).toThrow(ConfigError);
  });

  // The MCP server and the agent tools read their adapters from here.
  it.each([
    ['stripe', 'apiKeyEnv', 'sk_test_env', expect.arrayContaining(['paymentIntents.create'])],
    ['resend', 'apiKeyEnv', 're_test_env', ['emails.send', 'batch.send']],
    ['slack', 'tokenEnv', 'xoxb-test-env', ['chat.postMessage', 'chat.update']],
    ['github', 'tokenEnv', 'ghp_test_env', ['issues.create', 'issues.createComment']],
  ])('builds the %s adapter from its %s variable and says when it is not set', async (name, key, secret, ops) => {
    expect(() => parseConfig({ adapters: { [name]: {} } })).toThrow(new RegExp(`adapters\\.${name}\\.${key}`));
    const variable = `RS_TEST_${name.toUpperCase()}`;
    const cfg = parseConfig(
      { ledger: 'x.db', adapters: { [name]: { [key]: variable, baseUrl: 'http://127.0.0.1:9' } } },
      dir,
    );
    await expect(createAdapters(cfg, {})).rejects.toThrow(new RegExp(`${variable} is not set`));
    const adapters = await createAdapters(cfg, { [variable]: secret });
    expect(adapters[name]?.provider).toBe(name);
    expect(Object.keys(adapters[name]!.operations)).toEqual(ops);
    expect(() => parseConfig({ adapters: { [name]: { [key]: 'K', apiKey: 're_inline' } } })).toThrow(
      new RegExp(`adapters\\.${name}\\.apiKey`),
    );
  });

  it('a sandbox whose behaviour the file does not describe is the replaying provider of the drills', async () => {
    const { createSandboxAdapter, REPLAYING_BEHAVIOUR } = await import('@retrysafe/sandbox');
    const baseUrl = 'http://127.0.0.1:9';
    const { sandbox } = await createAdapters(parseConfig({ adapters: { sandbox: { baseUrl } } }));
    const replaying = createSandboxAdapter({ baseUrl, timeoutMs: 5000, behaviour: REPLAYING_BEHAVIOUR });
    expect(sandbox!.operations['records.create']!.card).toEqual(replaying.operations['records.create']!.card);
  });

  it('passes an adapter entry’s account to the adapter; an empty one is refused', async () => {
    const cfg = parseConfig(
      {
        ledger: 'x.db',
        adapters: {
          slack: { tokenEnv: 'RS_TEST_SLACK', account: 'acme-workspace' },
          sandbox: { baseUrl: 'http://127.0.0.1:9', account: 'sb-2' },
        },
      },
      dir,
    );
    const adapters = await createAdapters(cfg, { RS_TEST_SLACK: 'xoxb-test-env' });
    expect([adapters.slack?.account, adapters.sandbox?.account]).toEqual(['acme-workspace', 'sb-2']);
    expect(() => parseConfig({ adapters: { slack: { tokenEnv: 'K', account: '' } } })).toThrow(
      /adapters\.slack\.account/,
    );
  });

  it('opens a SQLite ledger for a path', async () => {
    const ledger = await openLedger('ledger.db', dir);
    expect(await ledger.list()).toEqual([]);
    await ledger.close();
  });

  // A bad entry later in the file must not leak the clients and pools of the ones built before it.
  it.each([
    ['a factory throws', { module: './throws.mjs' }, /throws\.mjs failed: no second/, ['first']],
    [
      'an operation is unknown',
      { module: './opens.mjs', options: { name: 'second' } },
      /no operation "nope"/,
      ['first', 'second'],
    ],
  ])('closes the adapters it built when %s, then throws the first error', async (_, second, error, expected) => {
    const closed: string[] = [];
    (globalThis as Record<string, unknown>).closedAdapters = closed;
    const opens =
      'export default (o) => ({ operations: {}, close: async () => globalThis.closedAdapters.push(o.name) });';
    writeFileSync(join(dir, 'opens.mjs'), opens);
    writeFileSync(join(dir, 'throws.mjs'), "export default () => { throw new Error('no second'); };");
    const adapters = { first: { module: './opens.mjs', options: { name: 'first' } }, second };
    const cfg = parseConfig({ adapters, operations: ['first.nope'] }, dir);
    await expect(createAdapters(cfg, {})).rejects.toThrow(error);
    expect(closed).toEqual(expected);
  });
});
