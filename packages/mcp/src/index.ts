export { createCoalescer } from './coalesce.js';
export { createFenceAdapter } from './fence/fence-adapter.js';
export { FenceConfigError, parseFenceConfig } from './fence/fence-config.js';
export { UNFENCED_NOTE } from './fence/fence-server.js';
export { type ProbeReceipt, runProbe } from './probe.js';
export { createRetrysafeMcpServer, type McpServerOptions, serveHttp } from './server.js';
