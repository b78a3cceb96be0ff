import { createAdapters, exposedOperations, loadConfig, openLedger } from '@retrysafe/config';
import { createRunner, jsonlHandoffSink } from '@retrysafe/core';
import { list, num, parseOptions, text, UsageError } from './cli-options.js';
import { createCoalescer } from './coalesce.js';
import { SERVE_COMMAND } from './commands.js';
import { ledgerWithEnvKeys, receiptKeyFromEnv } from './env-keys.js';
import { createRetrysafeMcpServer, serveHttp, serveStdio } from './server.js';

/** `retrysafe-mcp --config …` (SERVE_COMMAND). */
export async function runServe(
  argv: readonly string[],
  log: (line: string) => void = (l) => process.stderr.write(l + '\n'),
): Promise<void> {
  const p = parseOptions(argv, SERVE_COMMAND);
  const configPath = text(p, '--config') ?? process.env.RETRYSAFE_CONFIG;
  if (!configPath) throw new UsageError('name the config: --config <retrysafe.yaml> (or set RETRYSAFE_CONFIG)');
  const config = loadConfig(configPath);
  const byName = await createAdapters(config);
  const adapters = Object.values(byName);
  // the config names operations by its adapter keys; tools are named by provider
  const operations = exposedOperations(config, byName);
  const ledger = ledgerWithEnvKeys(await openLedger(config.ledger, config.baseDir));
  const runner = createRunner({
    ledger,
    ...(config.handoffs ? { handoff: jsonlHandoffSink(config.handoffs) } : {}),
    ...(config.policy ? { policy: config.policy } : {}),
    ...(config.redact ? { redact: { fields: [...(config.redact.fields ?? [])] } } : {}),
    ...receiptKeyFromEnv(),
  });
  const coalescer = createCoalescer(ledger);
  const make = () =>
    createRetrysafeMcpServer({
      runner,
      ledger,
      adapters,
      coalescer,
      ...(operations ? { operations } : {}),
      ...(config.policy?.waitForOtherMs !== undefined ? { waitMs: config.policy.waitForOtherMs } : {}),
    });
  if (!p.values.has('--http')) return serveStdio(make());
  const configured = process.env.RETRYSAFE_MCP_TOKEN;
  const h = await serveHttp(make, {
    port: num(p, '--port') ?? 0,
    allowedHosts: list(p, '--allow-host'),
    allowedOrigins: list(p, '--allow-origin'),
    ...(configured ? { token: configured } : {}),
  });
  log(`retrysafe MCP server on ${h.url}`);
  log(
    configured
      ? 'bearer token: from RETRYSAFE_MCP_TOKEN'
      : `bearer token (send as "Authorization: Bearer <token>"): ${h.token}`,
  );
}
