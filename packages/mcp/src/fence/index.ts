export { createFenceAdapter, fenceCard, classifyToolAnswer, classifyToolError, type FenceAdapterOptions, type UpstreamClient, type UpstreamTool } from './fence-adapter.js';
export { FenceConfigError, loadFenceConfig, parseFenceConfig, type FenceConfig, type FenceToolConfig, type FenceKeyConfig, type FenceLookupConfig, type FencePolicy } from './fence-config.js';
export { createFenceServer, FENCE_HANDOFFS_TOOL, FENCE_STATUS_TOOL, UNFENCED_NOTE, type FenceServerOptions } from './fence-server.js';
export { connectUpstream, upstreamEnv, UpstreamUnavailableError, type RestartPolicy, type Upstream, type UpstreamTarget } from './upstream.js';
export { FENCE_ANSWER_SCHEMA, fencedOutputSchema } from './fence-output.js';
export { probeTool, type ProbeOptions, type ProbeReceipt } from './probe.js';
