import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { UpstreamTool } from './fence-adapter.js';

/** Where the upstream MCP server is: a command to spawn (stdio) or a streamable HTTP URL. */
export type UpstreamTarget = { readonly command: string; readonly args?: readonly string[]; readonly env?: Record<string, string> } | { readonly url: string };

export interface Upstream {
  readonly client: Client;
  readonly tools: readonly UpstreamTool[];
  close(): Promise<void>;
}

/** Connects to the upstream with the real MCP client and reads its whole tool list (all pages). */
export async function connectUpstream(target: UpstreamTarget, name = 'retrysafe-fence'): Promise<Upstream> {
  const client = new Client({ name, version: '0.1.0' });
  const transport =
    'url' in target
      ? new StreamableHTTPClientTransport(new URL(target.url))
      : new StdioClientTransport({ command: target.command, args: [...(target.args ?? [])], ...(target.env ? { env: target.env } : {}), stderr: 'inherit' });
  await client.connect(transport);
  const tools: UpstreamTool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...(page.tools as unknown as UpstreamTool[]));
    cursor = page.nextCursor;
  } while (cursor);
  return { client, tools, close: () => client.close() };
}
