// A serve that cannot start closes what it had built for it (the adapters' clients, the ledger): its caller may live on.
import { describe, expect, it, vi } from 'vitest';
import { runServe } from '../src/commands.js';
import { httpExampleWithSchema, onCleanup } from './child-helpers.js';

const count = { adapters: 0, adaptersClosed: 0, ledgers: 0, ledgersClosed: 0, refuseTools: false };
vi.mock('@retrysafe/config', async (original) => {
  const real = await original<typeof import('@retrysafe/config')>();
  return {
    ...real,
    createAdapters: async (...args: Parameters<typeof real.createAdapters>) => {
      const adapters = await real.createAdapters(...args);
      // an adapter is frozen: a copy whose close counts
      const counted = (a: (typeof adapters)[string]) => ({
        ...a,
        close: async () => (count.adaptersClosed++, a.close?.()),
      });
      count.adapters += Object.keys(adapters).length;
      return Object.fromEntries(Object.entries(adapters).map(([name, a]) => [name, counted(a)]));
    },
    openLedger: async (...args: Parameters<typeof real.openLedger>) => {
      const ledger = await real.openLedger(...args);
      count.ledgers++;
      const close = ledger.close.bind(ledger);
      return Object.assign(ledger, { close: () => (count.ledgersClosed++, close()) });
    },
  };
});
vi.mock('../src/server.js', async (original) => {
  const real = await original<typeof import('../src/server.js')>();
  return {
    ...real,
    createRetrysafeMcpServer: (...args: Parameters<typeof real.createRetrysafeMcpServer>) => {
      if (count.refuseTools) throw new Error('two tools of one name');
      return real.createRetrysafeMcpServer(...args);
    },
  };
});

const schema = { properties: { sku: {}, quantity: {} } };

describe('retrysafe-mcp (serve) that cannot start closes the adapters and the ledger it had opened', () => {
  it.each([
    ['a params schema that cannot compile', { ...schema, $ref: '#/$defs/Missing' }, {}, false, /does not compile/, 0],
    ['a malformed params key', schema, { RETRYSAFE_PARAMS_KEYS: 'k1:tooShort' }, false, /RETRYSAFE_PARAMS_KEYS/, 0],
    ['a tool set the server refuses', schema, {}, true, /two tools of one name/, 1],
  ])('%s', async (_, paramsSchema, env, refuseTools, error, ledgers) => {
    Object.assign(count, { adapters: 0, adaptersClosed: 0, ledgers: 0, ledgersClosed: 0, refuseTools });
    const file = httpExampleWithSchema('retrysafe-serve-closes-', paramsSchema);
    Object.assign(process.env, { ACME_AUTH: 'Bearer test', ...env });
    onCleanup(() => {
      for (const name of ['ACME_AUTH', ...Object.keys(env)]) delete process.env[name];
    });
    await expect(runServe(['--config', file, '--http'], () => {})).rejects.toThrow(error);
    expect(count).toMatchObject({ adapters: 1, adaptersClosed: 1, ledgers, ledgersClosed: ledgers });
  });

  it('and one that served closes them when stopped', async () => {
    Object.assign(count, { adapters: 0, adaptersClosed: 0, ledgers: 0, ledgersClosed: 0, refuseTools: false });
    process.env.ACME_AUTH = 'Bearer test';
    onCleanup(() => delete process.env.ACME_AUTH);
    let served: () => void = () => {};
    const serving = runServe(['--config', httpExampleWithSchema('retrysafe-serve-closes-', schema), '--http'], () =>
      served(),
    );
    await new Promise<void>((resolve) => (served = resolve));
    process.emit('SIGTERM', 'SIGTERM');
    expect(await serving).toBe(0);
    expect(count).toMatchObject({ adapters: 1, adaptersClosed: 1, ledgers: 1, ledgersClosed: 1 });
  });
});
