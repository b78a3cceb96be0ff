import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep, setImmediate as turn } from 'node:timers/promises';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CONFIG_ENV,
  ConfigError,
  createAdapters,
  exposedOperations,
  keysFromEnv,
  loadConfigFile,
  openLedger,
  type RetrysafeConfig,
  secretFromEnv,
} from '@retrysafe/config';
import { type AdapterV1, canonicalJson, sha256Hex } from '@retrysafe/contract';
import { createRunner, encryptParams, jsonlHandoffSink, type PolicyOverrides } from '@retrysafe/core';
import { checkParamsSchema, resolvePolicy } from '@retrysafe/core/internal';
import {
  CONFIG_CODES,
  PROBE_COMMAND,
  parseOptions,
  SERVE_COMMAND,
  UsageError,
  type Values,
  WRAP_COMMAND,
} from './cli-options.js';
import { createCoalescer } from './coalesce.js';
import { answerValue, followUpstream, readPath } from './fence/fence-adapter.js';
import { loadFenceConfig } from './fence/fence-config.js';
import { createFenceServer } from './fence/fence-server.js';
import { connectUpstream, type Upstream, type UpstreamClient, type UpstreamTarget } from './fence/upstream.js';
import { aborted } from './fence/upstream-task.js';
import { createRetrysafeMcpServer, LOOPBACK_NAMES, serveHttp } from './server.js';

const toStderr = (line: string): void => void process.stderr.write(`${line}\n`);
const toStdout = (line: string): void => void process.stdout.write(`${line}\n`);

// RETRYSAFE_PARAMS_KEYS encrypts stored params (first key encrypts, all decrypt); RETRYSAFE_RECEIPT_KEYS seals receipts.
// The handoffs file lies next to the config file, as the ledger does, not in the working directory.
async function servingParts(
  c: Pick<RetrysafeConfig, 'ledger' | 'baseDir' | 'redact' | 'handoffs'> & { policy?: PolicyOverrides },
) {
  // Malformed keys are refused before the ledger is opened.
  const paramsKeys = keysFromEnv('RETRYSAFE_PARAMS_KEYS');
  const receiptKeys = keysFromEnv('RETRYSAFE_RECEIPT_KEYS');
  let ledger = await openLedger(c.ledger, c.baseDir);
  if (paramsKeys) ledger = encryptParams(ledger, { key: paramsKeys.current, previous: paramsKeys.previous });
  const runner = createRunner({
    ledger,
    handoff: c.handoffs ? jsonlHandoffSink(resolve(c.baseDir, c.handoffs)) : undefined,
    policy: c.policy,
    redact: c.redact,
    receiptKey: receiptKeys?.current,
  });
  return { ledger, runner, coalescer: createCoalescer(ledger, c.policy?.waitForOtherMs) };
}

/** A policy or a params schema that cannot work for an exposed operation (`only`: `<provider>.<operation>`, default
 * all) is refused at start (RunnerConfigurationError), not on its every call. */
function checkAtStart(adapters: readonly AdapterV1[], policy: PolicyOverrides | undefined, only?: string[]): void {
  for (const adapter of adapters)
    for (const [name, op] of Object.entries(adapter.operations)) {
      if (only && !only.includes(`${adapter.provider}.${name}`)) continue;
      resolvePolicy(op.card, policy);
      checkParamsSchema(op);
    }
}

/** What is found wrong after a file was read (an adapter's unset variable, a fenced tool's card, a tool the upstream
 * does not list, a policy) names the file, as what its reading finds does: one may have several. */
async function naming<T>(file: string, make: () => T | Promise<T>): Promise<T> {
  try {
    return await make();
  } catch (e) {
    const code = String((e as { code?: unknown } | null)?.code);
    if (e instanceof Error && CONFIG_CODES.includes(code) && !e.message.startsWith(`${file}: `))
      e.message = `${file}: ${e.message}`;
    throw e;
  }
}

/** How long a stdio server whose host closed its stdin waits for the calls under way: with the upstream's stop after
 * it, less than the official SDK's host waits before its SIGTERM and its SIGKILL. */
const SHUTDOWN_GRACE_MS = 1500;

/** A stdio server's end: the tool calls under way are answered (one still running after the grace ends as a crash
 * would, reconciled later), then the upstream is stopped and the ledger closed. */
const stopping =
  ({ coalescer, ledger }: Awaited<ReturnType<typeof servingParts>>, upstream?: { close(): Promise<void> }) =>
  async () => {
    await coalescer.settled(SHUTDOWN_GRACE_MS);
    await turn(); // the answers of the calls that ended go out in the promise reactions that follow theirs
    await upstream?.close().catch(() => undefined);
    await ledger.close();
  };

// A terminal that closes hangs up; supervisors stop with SIGTERM, SIGINT or SIGQUIT (supervisord's stopsignal).
const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const;
const TOKEN_ENV = 'RETRYSAFE_MCP_TOKEN';

/** Runs `command` with `stop`, which the first stop signal aborts: it stops what it started and returns. That stop is
 * not cut short by another signal's default (a supervisor's, or a host's while we stop), which would leave an upstream
 * running; but a second signal is someone the stop takes too long for: what the command gave `onKill` runs (an upstream
 * is ended at once) and the signal then ends the process as it does by default. The listeners go with the command. */
async function stoppable<T>(
  command: (stop: AbortSignal, onKill: (end: () => Promise<void>) => void) => Promise<T>,
): Promise<T> {
  const stop = new AbortController();
  const ends: (() => Promise<void>)[] = [];
  let killed: Promise<void> | undefined;
  const off = () => {
    for (const s of SIGNALS) process.off(s, on);
  };
  const on = (signal: NodeJS.Signals) => {
    if (!stop.signal.aborted) return stop.abort(signal);
    off();
    killed = Promise.allSettled(ends.map((end) => end())).then(() => void process.kill(process.pid, signal));
  };
  for (const s of SIGNALS) process.on(s, on);
  try {
    return await command(stop.signal, (end) => ends.push(end));
  } finally {
    off();
    await killed; // a stop that ends first does not turn a forced one into an exit 0
  }
}

/** Serves on stdio, or with `--http` on loopback behind the Host/Origin allow-lists and a bearer token, until `signal`
 * aborts or (stdio) the host closes our stdin; then stops. */
async function serve(
  o: Values<typeof SERVE_COMMAND.options>,
  make: () => Server,
  what: string,
  log: (line: string) => void,
  stop: () => Promise<void>,
  signal: AbortSignal,
): Promise<number> {
  let http: Awaited<ReturnType<typeof serveHttp>> | undefined;
  if (!signal.aborted) {
    const ended = new Promise((resolve) => {
      signal.addEventListener('abort', resolve, { once: true });
      // MCP's stdio shutdown: the host closes our stdin and waits for us to exit. A host that started us through npx
      // cannot signal us, and an upstream child or a ledger's connections would keep us running.
      // A host that can no longer read our stdout (EPIPE) is gone as well.
      if (!o.http) {
        process.stdin.once('end', resolve);
        process.stdout.once('error', resolve);
      }
    });
    if (!o.http) await make().connect(new StdioServerTransport());
    else {
      const configured = secretFromEnv(TOKEN_ENV);
      http = await serveHttp(make, {
        port: o.port ?? 0,
        allowedHosts: o.allowHost ?? [],
        allowedOrigins: o.allowOrigin ?? [],
        ...(configured ? { token: configured } : {}),
      }).catch((e: unknown) => {
        // The token's rule is serveHttp's; a variable that breaks it is bad config, named by the variable.
        throw configured && e instanceof TypeError ? new ConfigError(TOKEN_ENV, e.message.replace(/^.*?: /, '')) : e;
      });
      log(`${what} on ${http.url}`);
      log(
        configured
          ? `bearer token: from ${TOKEN_ENV}`
          : `bearer token (send as "Authorization: Bearer <token>"): ${http.token}`,
      );
    }
    await ended;
  }
  await stop();
  await http?.close();
  return 0;
}

/** `retrysafe-mcp --config …` (SERVE_COMMAND): serves until stopped, then its exit code. */
export async function runServe(argv: readonly string[], log = toStderr): Promise<number> {
  const { values: o } = parseOptions(argv, SERVE_COMMAND);
  const configPath = o.config ?? process.env[CONFIG_ENV];
  if (!configPath) throw new UsageError(`name the config: --config <retrysafe.yaml> (or set ${CONFIG_ENV})`);
  return stoppable(async (stop) => {
    const config = await loadConfigFile(configPath);
    const { byName, operations } = await naming(configPath, async () => {
      const byName = await createAdapters(config);
      // the config names operations by its adapter keys; tools are named by provider
      const operations = exposedOperations(config, byName);
      checkAtStart(Object.values(byName), config.policy, operations);
      return { byName, operations };
    });
    const parts = await servingParts(config);
    const make = () => createRetrysafeMcpServer({ ...parts, adapters: Object.values(byName), operations });
    make(); // a tool set it refuses (two tools of one name) is refused at start, not on the first HTTP request
    return serve(o, make, 'retrysafe MCP server', log, stopping(parts), stop);
  });
}

/** The upstream server: `--url`, else the command after `--`. */
function target(
  url: string | undefined,
  rest: readonly string[],
  env?: Readonly<Record<string, string | null>>,
): UpstreamTarget {
  if (url !== undefined) {
    if (rest.length) throw new UsageError('name the server once: -- <command …> or --url URL, not both');
    const u = URL.parse(url);
    if (!u) throw new UsageError(`--url ${url} is not a URL`);
    if (!LOOPBACK_NAMES.includes(u.hostname) && u.protocol !== 'https:')
      throw new UsageError('a server URL must be https, or http on loopback');
    return { url };
  }
  if (rest.length === 0) throw new UsageError('name the server: -- <command …> (stdio) or --url URL (streamable HTTP)');
  return { command: rest[0]!, args: rest.slice(1), ...(env ? { env } : {}) };
}

/** `retrysafe-mcp wrap …` (WRAP_COMMAND): serves until stopped, then its exit code. */
export async function runWrap(argv: readonly string[], log = toStderr): Promise<number> {
  const { values: o, rest } = parseOptions(argv, WRAP_COMMAND);
  const file = o.config;
  if (file === undefined) throw new UsageError('name the fence file: --config <fence.yaml>');
  const config = loadFenceConfig(file);
  return stoppable(async (stop, onKill) => {
    const starting = connectUpstream(target(o.url, rest, config.env), undefined, { signal: stop, onKill });
    try {
      const upstream = await starting;
      const fence = await naming(file, () => {
        const fence = followUpstream(config, upstream);
        checkAtStart([fence.current().adapter], config.policy);
        return fence;
      });
      const parts = await servingParts(config);
      const make = () => createFenceServer({ ...parts, fence, upstream });
      const fenced = Object.keys(config.tools);
      const passed = upstream.tools.map((t) => t.name).filter((n) => !fenced.includes(n));
      log(
        `retrysafe fence: ${fenced.length} fenced (${fenced.join(', ')}), ${passed.length} passed through${passed.length ? ` (${passed.join(', ')})` : ''}`,
      );
      return await serve(o, make, 'retrysafe fence', log, stopping(parts, upstream), stop);
    } catch (e) {
      // A fence that cannot start leaves no upstream running. A signal while it starts closes the one being started: a
      // request to stop, answered with 0 as serving does.
      const upstream = await starting.catch(() => undefined);
      await upstream?.close();
      if (stop.aborted) return 0;
      throw e;
    }
  });
}

/** `retrysafe-mcp probe …` (PROBE_COMMAND): the receipt, and the exit code (0 at most once, 1 duplicates, 3 no effect seen). */
export async function runProbe(argv: readonly string[], out = toStdout) {
  const { values: o, rest } = parseOptions(argv, PROBE_COMMAND);
  const { tool, countTool, countPath } = o;
  if (tool === undefined || countTool === undefined || countPath === undefined)
    throw new UsageError('name the tools: --tool, --count-tool and --count-path');
  // A receipt that cannot be written is found before any call is fired: the calls have effects.
  if (o.receipt !== undefined) {
    try {
      writeFileSync(o.receipt, '', { flag: 'a' });
    } catch (e) {
      const why = (e as Error).message.replace(/^(E[A-Z]+): ([^,]+),.*$/s, '$2 ($1)');
      throw new UsageError(`--receipt ${o.receipt}: cannot write it: ${why}`);
    }
  }
  return stoppable(async (stop, onKill) => {
    let upstream: Upstream | undefined;
    try {
      upstream = await connectUpstream(target(o.url, rest), 'retrysafe-probe', { signal: stop, onKill });
      const probing = probeTool({ ...o, tool, countTool, countPath, client: upstream, signal: stop });
      const receipt = await Promise.race([probing, aborted(stop)]);
      if (o.receipt !== undefined) writeFileSync(o.receipt, JSON.stringify(receipt, null, 2) + '\n');
      out(receipt.summary);
      out(
        `calls: ${receipt.calls.map((c) => `${c.phase}=${c.answer}`).join(' ')}; effects counted by ${countTool}: ${receipt.before} → ${receipt.after}`,
      );
      return { receipt, exit: receipt.verdict === 'at-most-once' ? 0 : receipt.verdict === 'duplicates' ? 1 : 3 };
    } catch (e) {
      // A signal ends the server and the calls: no verdict, which is not "at most once".
      throw stop.aborted ? new Error(`stopped by ${stop.reason}: no verdict`) : e;
    } finally {
      await upstream?.close();
    }
  });
}

type Answer = 'ok' | 'tool-error' | 'timeout' | 'error';
export type ProbeReceipt = Awaited<ReturnType<typeof probeTool>>;

const CALL_TIMEOUT_MS = 30_000;

/** Identical calls at once, then one abandoned on a client timeout and re-issued; the effects are counted by a read tool. */
async function probeTool(
  o: Values<typeof PROBE_COMMAND.options> &
    Record<'tool' | 'countTool' | 'countPath', string> & { client: UpstreamClient; signal: AbortSignal },
) {
  const startedAt = new Date().toISOString();
  const count = async (): Promise<number> => {
    const args = { name: o.countTool, arguments: o.countArgs ?? {} };
    const answer = await o.client.callTool(args, undefined, { timeout: CALL_TIMEOUT_MS });
    const value = answerValue(answer as never);
    if (answer.isError)
      throw new Error(`${o.countTool} answered an error: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
    const items = readPath(value, o.countPath);
    if (!Array.isArray(items)) throw new Error(`${o.countTool} gave no list at "${o.countPath}"`);
    const match = Object.entries(o.match ?? {});
    return items.filter((item) => match.every(([p, v]) => readPath(item, p) === v)).length;
  };
  const call = async (timeout: number): Promise<Answer> => {
    try {
      const a = await o.client.callTool({ name: o.tool, arguments: o.args ?? {} }, undefined, { timeout });
      return a.isError ? 'tool-error' : 'ok';
    } catch (e) {
      return (e as { code?: unknown }).code === -32001 ? 'timeout' : 'error';
    }
  };

  const before = await count();
  const concurrent = await Promise.all(Array.from({ length: o.concurrent ?? 3 }, () => call(CALL_TIMEOUT_MS)));
  const calls = [
    ...concurrent.map((answer) => ({ phase: 'concurrent' as const, answer })),
    { phase: 'timed-out' as const, answer: await call(o.timeoutMs ?? 200) },
    { phase: 're-issued' as const, answer: await call(CALL_TIMEOUT_MS) },
  ];
  await sleep(o.settleMs ?? 1500, undefined, { signal: o.signal });
  const after = await count();
  const effects = after - before;
  const verdict: 'at-most-once' | 'duplicates' | 'no-effect-seen' =
    effects > 1 ? 'duplicates' : effects === 1 ? 'at-most-once' : 'no-effect-seen';
  const summary = {
    duplicates: `DUPLICATES: ${effects} effects for one intent after ${calls.length} identical calls`,
    'at-most-once': `at most once: 1 effect for one intent after ${calls.length} identical calls`,
    'no-effect-seen': calls.some((c) => c.answer === 'ok')
      ? `no effect seen after ${calls.length} calls (does ${o.countTool} list what ${o.tool} creates?)`
      : `no effect seen: none of the ${calls.length} calls to ${o.tool} succeeded (are the tool's name and --args right?)`,
  }[verdict];
  return {
    probe: 'retrysafe.probe/v1' as const,
    tool: o.tool,
    // The arguments themselves are not kept: they may hold personal data.
    argsDigest: sha256Hex(canonicalJson(o.args ?? {})),
    startedAt,
    finishedAt: new Date().toISOString(),
    calls,
    before,
    after,
    effects,
    verdict,
    summary,
  };
}
