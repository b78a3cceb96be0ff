import type { Context, Middleware } from '@microsoft/microsoft-graph-client';
import { AdapterConfigurationError } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { BearerAuthMiddleware, createGraphClient } from './msgraph-client.js';

/** The next middleware: records what it was given (nothing leaves the process). */
function recorder() {
  const seen: { url: string; auth: string | undefined }[] = [];
  const next: Middleware = {
    async execute(context: Context) {
      const headers = (context.options?.headers ?? {}) as Record<string, string>;
      seen.push({ url: String(context.request), auth: headers['Authorization'] });
    },
  };
  return { seen, next };
}

describe('BearerAuthMiddleware: the token never travels in clear', () => {
  it.each([
    'https://graph.microsoft.com/v1.0/me/sendMail',
    'http://127.0.0.1:4010/v1.0/me/sendMail',
    'http://localhost:9/x',
  ])('adds the bearer for %s', async (url) => {
    const { seen, next } = recorder();
    const mw = new BearerAuthMiddleware('secret-token');
    mw.setNext(next);
    await mw.execute({ request: url, options: {} } as Context);
    expect(seen).toEqual([{ url, auth: 'Bearer secret-token' }]);
  });

  it.each(['http://graph.example.com/v1.0/me/sendMail', 'http://10.0.0.5/v1.0/me/messages?$skiptoken=x'])(
    'refuses %s before anything is sent (e.g. a nextLink to plain http)',
    async (url) => {
      const { seen, next } = recorder();
      const mw = new BearerAuthMiddleware('secret-token');
      mw.setNext(next);
      const e = await mw.execute({ request: url, options: {} } as Context).catch((x: unknown) => x);
      expect(AdapterConfigurationError.isInstance(e)).toBe(true);
      expect(String((e as Error).message)).not.toContain('secret-token');
      expect(seen).toEqual([]);
    },
  );

  it('createGraphClient refuses a plain-http base URL that is not loopback', () => {
    expect(() => createGraphClient({ token: 't', baseUrl: 'http://graph.example.com/' })).toThrow(/loopback/);
    expect(() => createGraphClient({ token: 't', baseUrl: 'http://127.0.0.1:1/' })).not.toThrow();
  });
});
