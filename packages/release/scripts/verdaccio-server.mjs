// Child process: `node verdaccio-server.mjs <runtimeDir> <config.yaml>`. Runs Verdaccio from the
// runtime folder, listens on 127.0.0.1 with a port chosen by the OS, prints `READY <url>`, and exits
// when its parent goes away (IPC disconnect) or on SIGTERM.
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [runtimeDir, configPath] = process.argv.slice(2);
if (!runtimeDir || !configPath) {
  console.error('usage: verdaccio-server.mjs <runtimeDir> <config.yaml>');
  process.exit(2);
}
const { runServer } = createRequire(join(runtimeDir, 'package.json'))('verdaccio');
const server = await runServer(configPath);
server.listen(0, '127.0.0.1', () => {
  const { address, port } = server.address();
  console.log(`READY http://${address}:${port}/`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
  setTimeout(() => process.exit(0), 2_000).unref();
};
process.on('SIGTERM', stop);
process.on('disconnect', stop);
