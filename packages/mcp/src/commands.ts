import { resolve } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
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
import type { AdapterV1 } from '@retrysafe/contract';
import { createRunner, encryptParams, jsonlHandoffSink, type PolicyOverrides } from '@retrysafe/core';
import { checkParamsSchema, resolvePolicy } from '@retrysafe/core/internal';
import {
  CONFIG_CODES,
  parseOptions,
  SERVE_COMMAND,
  target,
  UsageError,
  type Values,
  WRAP_COMMAND,
} from './cli-options.js';
import { createCoalescer } from './coalesce.js';
import { followUpstream } from './fence/fence-adapter.js';
import { loadFenceConfig } from './fence/fence-config.js';
import { createFenceServer } from './fence/fence-server.js';
import { connectUpstream } from './fence/upstream.js';
import { createRetrysafeMcpServer, serveHttp } from './server.js';
import { stoppable } from './stoppable.js';

const toStderr = (line: string): void => void process.stderr.write(`${line}\n`);

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
  (
    { coalescer, ledger }: Awaited<ReturnType<typeof servingParts>>,
    upstream?: { close(after: Promise<unknown>): Promise<void> },
  ) =>
  async () => {
    // the answers of the calls that ended go out in the promise reactions that follow theirs
    const settled = coalescer.settled(SHUTDOWN_GRACE_MS).then(() => turn());
    await upstream?.close(settled).catch(() => undefined);
    await settled;
    await ledger.close();
  };

const TOKEN_ENV = 'RETRYSAFE_MCP_TOKEN';

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
  // A start that fails (a port in use) closes what was opened for it, as a stop does: the caller may live on.
  try {
    if (!signal.aborted) {
      const stdio = o.http ? undefined : new StdioServerTransport();
      const ended = new Promise((resolve) => {
        signal.addEventListener('abort', resolve, { once: true });
        // MCP's stdio shutdown: the host closes our stdin and waits for us to exit. A host that started us through npx
        // cannot signal us, and an upstream child or a ledger's connections would keep us running.
        // A host that can no longer read our stdout (EPIPE) is gone as well.
        if (stdio) {
          process.stdin.once('end', resolve);
          process.stdout.once('error', resolve);
          // The SDK closes it on a message too long for its buffer: it reads our stdin no more.
          stdio.onclose = () => resolve(undefined);
        }
      });
      if (stdio) await make().connect(stdio);
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
  } finally {
    await stop();
    await http?.close();
  }
  return 0;
}

/** `retrysafe-mcp --config …` (SERVE_COMMAND): serves until stopped, then its exit code. */
export async function runServe(argv: readonly string[], log = toStderr): Promise<number> {
  const { values: o } = parseOptions(argv, SERVE_COMMAND);
  const configPath = o.config ?? process.env[CONFIG_ENV];
  if (!configPath) throw new UsageError(`name the config: --config <retrysafe.yaml> (or set ${CONFIG_ENV})`);
  return stoppable(async (stop) => {
    const config = await loadConfigFile(configPath);
    const byName = await naming(configPath, () => createAdapters(config));
    const adapters = Object.values(byName);
    const closeAdapters = async () => void (await Promise.allSettled(adapters.map(async (a) => a.close?.())));
    // A start that fails closes what it had built (the adapters' clients, the ledger), then throws its first error.
    let ledger: { close(): Promise<void> } | undefined;
    let make: () => Server;
    let stopServing: () => Promise<void>;
    try {
      // the config names operations by its adapter keys; tools are named by provider
      const operations = exposedOperations(config, byName);
      await naming(configPath, () => checkAtStart(adapters, config.policy, operations));
      const parts = await servingParts(config);
      ledger = parts.ledger;
      make = () => createRetrysafeMcpServer({ ...parts, adapters, operations });
      make(); // a tool set it refuses (two tools of one name) is refused at start, not on the first HTTP request
      stopServing = stopping(parts);
    } catch (e) {
      await Promise.allSettled([ledger?.close(), closeAdapters()]);
      throw e;
    }
    return serve(o, make, 'retrysafe MCP server', log, () => stopServing().finally(closeAdapters), stop);
  });
}

/** `retrysafe-mcp wrap …` (WRAP_COMMAND): serves until stopped, then its exit code. */
export async function runWrap(argv: readonly string[], log = toStderr): Promise<number> {
  const { values: o, rest } = parseOptions(argv, WRAP_COMMAND);
  const file = o.config;
  if (file === undefined) throw new UsageError('name the fence file: --config <fence.yaml>');
  const config = loadFenceConfig(file);
  return stoppable(async (stop, onKill) => {
    const starting = connectUpstream(target(o.url, rest, config.env), undefined, {
      signal: stop,
      onKill,
      startTimeoutMs: o.startTimeoutMs,
      log,
    }).catch((e: unknown) => {
      // whatever its cause (not spawned, not reached, its initialize refused), a bad setup (CONFIG_CODES)
      const code = 'RETRYSAFE_UPSTREAM_START';
      throw Object.assign(new Error(String((e as Error)?.message ?? e), { cause: e }), { code });
    });
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
