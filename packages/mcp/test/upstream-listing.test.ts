/**
 * The upstream's tool list as the fence reads it, in process: a real SDK server on streamable HTTP (loopback) as
 * the upstream and the fence's own connection to it. A listing that never ends must end the start with a clear
 * error, not hang it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema, type ListToolsResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectUpstream } from '../src/fence/upstream.js';
import { onCleanup } from './fence-helpers.js';

/** A stateless streamable HTTP upstream whose tools/list answers `page(cursor)`; resolves to its URL. */
async function upstreamListing(page: (cursor: string | undefined) => ListToolsResult): Promise<string> {
  const http = createServer(async (req, res) => {
    const server = new Server({ name: 'paging', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async (r) => page(r.params?.cursor));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise((resolve) => http.close(resolve)));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

const tool = (name: string) => ({ name, inputSchema: { type: 'object' as const } });

describe("the upstream's tool list", () => {
  it('is read page by page to its end', async () => {
    const url = await upstreamListing((cursor) =>
      cursor === undefined ? { tools: [tool('a')], nextCursor: 'p2' } : { tools: [tool('b')] },
    );
    const upstream = await connectUpstream({ url });
    onCleanup(() => upstream.close());
    expect(upstream.tools.map((t) => t.name)).toEqual(['a', 'b']);
  });

  it('that never ends (the same cursor again and again) is refused at start, not followed forever', async () => {
    let pages = 0;
    const url = await upstreamListing(() => {
      pages++;
      return { tools: [tool(`t${pages}`)], nextCursor: 'again' };
    });
    await expect(connectUpstream({ url })).rejects.toThrow(/tools\/list/);
    expect(pages).toBeLessThanOrEqual(1000);
  }, 20_000);
});
