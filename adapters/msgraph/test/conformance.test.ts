// The shared duplicate-execution drill (@retrysafe/testkit) on every msgraph operation: the real
// Graph SDK → the testkit fault proxy → the loopback Graph sandbox, on the runner's virtual clock.
import { runConformance } from '@retrysafe/testkit/conformance';
import { createMsGraphAdapter } from '../src/index.js';
import { startMsGraphSandbox } from '../src/sandbox/index.js';
import { TOKEN, eventParams, mailParams, taskParams } from './helpers.js';

const graphError = (code: string) => ({ error: { code, message: `sandbox ${code}`, innerError: { 'request-id': '00000000-0000-4000-8000-000000000000' } } });
const faults = {
  permanent: { kind: 'status', status: 400, body: graphError('ErrorInvalidRecipients') },
  transient: { kind: 'status', status: 429, body: graphError('TooManyRequests') },
  rateLimited: { kind: 'status', status: 429, retryAfterS: 2, body: graphError('TooManyRequests') },
} as const;

runConformance({
  name: 'msgraph',
  createAdapter: ({ baseUrl, timeoutMs }) => createMsGraphAdapter({ accessToken: TOKEN, baseUrl, timeoutMs }),
  startSandbox: async ({ clock }) => {
    const s = await startMsGraphSandbox({ port: 0, accessToken: TOKEN, now: () => clock.now() });
    return { url: s.url, count: (op) => s.count(op), close: () => s.close(), expireKeys: () => s.expireKeys() };
  },
  // the testkit default (400 ms) lets a loaded machine time out the lookups, which then "cannot tell"
  timeoutMs: 2_000,
  operations: {
    'mail.send': { params: (i) => mailParams(i), changeIntent: (p) => ({ ...(p as object), message: { ...(p as ReturnType<typeof mailParams>).message, subject: 'changed' } }), faults },
    'events.create': { params: (i) => eventParams(i), changeIntent: (p) => ({ ...(p as object), event: { ...(p as ReturnType<typeof eventParams>).event, subject: 'changed' } }), faults },
    'todo.tasks.create': { params: (i) => taskParams(i), changeIntent: (p) => ({ ...(p as object), task: { title: 'changed' } }), faults },
  },
});
