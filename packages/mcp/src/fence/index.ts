export { createFenceAdapter, type UpstreamClient, type UpstreamTool } from './fence-adapter.js';
export { type FenceConfig, FenceConfigError, parseFenceConfig } from './fence-config.js';
export { createFenceServer, UNFENCED_NOTE } from './fence-server.js';
export type { ProbeOptions, ProbeReceipt } from './probe.js';
export type { Upstream } from './upstream.js';
