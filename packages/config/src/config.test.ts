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

  it('builds adapters from environment variables and says which one is missing', async () => {
    const cfg = parseConfig(
      { ledger: 'x.db', adapters: { stripe: { apiKeyEnv: 'RS_TEST_STRIPE', baseUrl: 'http://127.0.0.1:9' } } },
      dir,
    );
    await expect(createAdapters(cfg, {})).rejects.toThrow(/RS_TEST_STRIPE is not set/);
    const adapters = await createAdapters(cfg, { RS_TEST_STRIPE: 'sk_test_env' });
    expect(adapters.stripe?.provider).toBe('stripe');
    expect(Object.keys(adapters.stripe!.operations)).toContain('paymentIntents.create');
  });

  it('builds the resend adapter from its API key variable (the MCP server and agent tools read adapters from here)', async () => {
    const cfg = parseConfig(
      { ledger: 'x.db', adapters: { resend: { apiKeyEnv: 'RS_TEST_RESEND', baseUrl: 'http://127.0.0.1:9' } } },
      dir,
    );
    await expect(createAdapters(cfg, {})).rejects.toThrow(/RS_TEST_RESEND is not set/);
    const adapters = await createAdapters(cfg, { RS_TEST_RESEND: 're_test_env' });
    expect(adapters.resend?.provider).toBe('resend');
    expect(Object.keys(adapters.resend!.operations)).toEqual(['emails.send', 'batch.send']);
    expect(() => parseConfig({ adapters: { resend: { apiKeyEnv: 'K', apiKey: 're_inline' } } })).toThrow(
      /adapters\.resend\.apiKey/,
    );
  });

  it('builds the slack adapter from its token variable (the MCP server and the AI SDK tools get it this way)', async () => {
    expect(() => parseConfig({ adapters: { slack: {} } })).toThrow(/adapters\.slack\.tokenEnv/);
    const cfg = parseConfig(
      { ledger: 'x.db', adapters: { slack: { tokenEnv: 'RS_TEST_SLACK', baseUrl: 'http://127.0.0.1:9' } } },
      dir,
    );
    await expect(createAdapters(cfg, {})).rejects.toThrow(/RS_TEST_SLACK is not set/);
    const adapters = await createAdapters(cfg, { RS_TEST_SLACK: 'xoxb-test-env' });
    expect(adapters.slack?.provider).toBe('slack');
    expect(Object.keys(adapters.slack!.operations)).toEqual(['chat.postMessage', 'chat.update']);
  });

  it('builds the github adapter from its token variable (the MCP server and the AI SDK tools get it this way)', async () => {
    expect(() => parseConfig({ adapters: { github: {} } })).toThrow(/adapters\.github\.tokenEnv/);
    const cfg = parseConfig(
      { ledger: 'x.db', adapters: { github: { tokenEnv: 'RS_TEST_GITHUB', baseUrl: 'http://127.0.0.1:9' } } },
      dir,
    );
    await expect(createAdapters(cfg, {})).rejects.toThrow(/RS_TEST_GITHUB is not set/);
    const adapters = await createAdapters(cfg, { RS_TEST_GITHUB: 'ghp_test_env' });
    expect(adapters.github?.provider).toBe('github');
    expect(Object.keys(adapters.github!.operations)).toEqual(['issues.create', 'issues.createComment']);
  });

  it('opens a SQLite ledger for a path', async () => {
    const ledger = await openLedger('ledger.db', dir);
    expect(await ledger.list()).toEqual([]);
    await ledger.close();
  });
});
