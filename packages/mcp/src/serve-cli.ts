import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { createAdapters, exposedOperations, loadConfig, openLedger, type RetrysafeConfig } from '@retrysafe/config';
import { createRunner, encryptParams, jsonlHandoffSink, type PolicyOverrides, parseReceiptKeys } from '@retrysafe/core';
import { list, num, type ParsedOptions, parseOptions, text, toStderr, UsageError } from './cli-options.js';
import { createCoalescer } from './coalesce.js';
import { SERVE_COMMAND } from './commands.js';
import { createRetrysafeMcpServer, serveHttp, serveStdio } from './server.js';

// RETRYSAFE_PARAMS_KEYS encrypts stored params (first key encrypts, all decrypt); RETRYSAFE_RECEIPT_KEYS seals receipts.
export async function servingParts(
  c: Pick<RetrysafeConfig, 'ledger' | 'baseDir' | 'redact'> & { policy?: PolicyOverrides },
  handoffs: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
) {
  let ledger = await openLedger(c.ledger, c.baseDir);
  const keys = env.RETRYSAFE_PARAMS_KEYS ? parseReceiptKeys(env.RETRYSAFE_PARAMS_KEYS) : null;
  if (keys) {
    const previous = Object.entries(keys.keyring)
      .filter(([id]) => id !== keys.current.id)
      .map(([id, secret]) => ({ id, secret }));
    ledger = encryptParams(ledger, { key: keys.current, previous });
  }
  const runner = createRunner({
    ledger,
    ...(handoffs ? { handoff: jsonlHandoffSink(handoffs) } : {}),
    ...(c.policy ? { policy: c.policy } : {}),
    ...(c.redact ? { redact: { fields: [...(c.redact.fields ?? [])] } } : {}),
    ...(env.RETRYSAFE_RECEIPT_KEYS ? { receiptKey: parseReceiptKeys(env.RETRYSAFE_RECEIPT_KEYS).current } : {}),
  });
  return { ledger, runner, coalescer: createCoalescer(ledger, c.policy?.waitForOtherMs) };
}

/** Serves on stdio, or with `--http` on loopback behind the Host/Origin allow-lists and a bearer token. */
export async function serveParsed(
  p: ParsedOptions,
  make: () => Server,
  what: string,
  log: (line: string) => void,
): Promise<void> {
  if (!p.values.has('--http')) return serveStdio(make());
  const configured = process.env.RETRYSAFE_MCP_TOKEN;
  const h = await serveHttp(make, {
    port: num(p, '--port') ?? 0,
    allowedHosts: list(p, '--allow-host'),
    allowedOrigins: list(p, '--allow-origin'),
    ...(configured ? { token: configured } : {}),
  });
  log(`${what} on ${h.url}`);
  log(
    configured
      ? 'bearer token: from RETRYSAFE_MCP_TOKEN'
      : `bearer token (send as "Authorization: Bearer <token>"): ${h.token}`,
  );
}

/** `retrysafe-mcp --config …` (SERVE_COMMAND). */
export async function runServe(argv: readonly string[], log = toStderr): Promise<void> {
  const p = parseOptions(argv, SERVE_COMMAND);
  const configPath = text(p, '--config') ?? process.env.RETRYSAFE_CONFIG;
  if (!configPath) throw new UsageError('name the config: --config <retrysafe.yaml> (or set RETRYSAFE_CONFIG)');
  const config = loadConfig(configPath);
  const byName = await createAdapters(config);
  // the config names operations by its adapter keys; tools are named by provider
  const operations = exposedOperations(config, byName);
  const parts = await servingParts(config, config.handoffs);
  const make = () =>
    createRetrysafeMcpServer({
      ...parts,
      adapters: Object.values(byName),
      ...(operations ? { operations } : {}),
    });
  return serveParsed(p, make, 'retrysafe MCP server', log);
}
