/**
 * An OTLP/HTTP trace receiver in the test process: a node:http server that accepts what an OpenTelemetry collector
 * accepts on /v1/traces, as JSON (OTLP/JSON: hex ids, typed attribute values) or protobuf (decoded with the OTLP
 * protocol definitions that OpenTelemetry's own transformer package ships), and keeps every span with the service
 * that sent it and the encoding it came in.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  encoding: 'json' | 'protobuf';
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  attributes: Record<string, string | number | boolean>;
}

export interface OtlpReceiver {
  url: string;
  spans(): ReceivedSpan[];
  /** Every request body as it arrived, to search for what must never be sent. */
  rawBodies(): Buffer[];
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string | { toString(): string };
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface RawSpan {
  traceId: string | Uint8Array;
  spanId: string | Uint8Array;
  parentSpanId?: string | Uint8Array;
  name: string;
  attributes?: KeyValue[];
}
interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: RawSpan[] }[] }[];
}

/** The ExportTraceServiceRequest message of the OTLP protocol definitions. */
function protobufDecoder(): { decode(b: Uint8Array): unknown } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const root = require('@opentelemetry/otlp-transformer/build/src/generated/root') as {
    opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: { decode(b: Uint8Array): unknown } } } } } };
  };
  return root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
}

const hex = (id: string | Uint8Array | undefined): string => (id === undefined ? '' : typeof id === 'string' ? id : Buffer.from(id).toString('hex'));

function valueOf(v: AnyValue | undefined): string | number | boolean {
  if (!v) return '';
  if (v.stringValue !== undefined && v.stringValue !== null) return v.stringValue;
  if (v.boolValue !== undefined && v.boolValue !== null) return v.boolValue;
  if (v.doubleValue !== undefined && v.doubleValue !== null) return v.doubleValue;
  if (v.intValue !== undefined && v.intValue !== null) return Number(v.intValue.toString());
  return '';
}

const attributesOf = (kvs: KeyValue[] | undefined) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const decoder = protobufDecoder();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      bodies.push(body);
      const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
      if (req.method !== 'POST' || req.url !== '/v1/traces' || (type !== 'application/json' && type !== 'application/x-protobuf')) {
        res.writeHead(404).end();
        return;
      }
      const encoding = type === 'application/json' ? 'json' : 'protobuf';
      let message: ExportRequest;
      try {
        message = (encoding === 'json' ? JSON.parse(body.toString('utf8')) : decoder.decode(body)) as ExportRequest;
      } catch {
        res.writeHead(400).end();
        return;
      }
      for (const rs of message.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            received.push({ service, encoding, traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), name: s.name, attributes: attributesOf(s.attributes) });
          }
        }
      }
      // An empty ExportTraceServiceResponse: `{}` in JSON, no bytes in protobuf.
      res.writeHead(200, { 'content-type': type });
      res.end(encoding === 'json' ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    rawBodies: () => [...bodies],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
