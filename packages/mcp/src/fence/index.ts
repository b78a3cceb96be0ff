export {
  classifyToolAnswer,
  classifyToolError,
  createFenceAdapter,
  type FenceAdapterOptions,
  fenceCard,
  type UpstreamClient,
  type UpstreamTool,
} from './fence-adapter.js';
export {
  type FenceConfig,
  FenceConfigError,
  type FenceKeyConfig,
  type FenceLookupConfig,
  type FencePolicy,
  type FenceToolConfig,
  loadFenceConfig,
  parseFenceConfig,
} from './fence-config.js';
export { FENCE_ANSWER_SCHEMA, fencedOutputSchema } from './fence-output.js';
export { createFenceServer, type FenceServerOptions, UNFENCED_NOTE } from './fence-server.js';
export { type ProbeOptions, type ProbeReceipt, probeTool } from './probe.js';
export {
  connectUpstream,
  type RestartPolicy,
  type Upstream,
  type UpstreamTarget,
  UpstreamUnavailableError,
  upstreamEnv,
} from './upstream.js';
