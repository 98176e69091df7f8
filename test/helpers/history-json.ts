/**
 * Workflow histories to and from Temporal's JSON history format (what `temporal workflow show -o json` writes).
 *
 * `historyToJSON` / `historyFromJSON` of `@temporalio/common/lib/proto-utils` throw "type must be a Type" in this
 * install: @temporalio/common and @temporalio/proto each carry their own copy of protobufjs 8, and common's protojson
 * rejects the types of proto's copy. The same conversion is done here with the protojson of the protobufjs copy that
 * @temporalio/proto itself loads, so the types and the converter come from one library.
 */
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';

type History = proto.temporal.api.history.v1.IHistory;

interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const protojson = require(require.resolve('protobufjs/ext/protojson', { paths: [require.resolve('@temporalio/proto')] })) as ProtoJson;
const historyType = (patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }).lookupType('temporal.api.history.v1.History');

/** A fetched history as a plain JSON value (64-bit numbers as strings, enums by name, bytes in base64). */
export function historyToJson(history: History): unknown {
  return protojson.toJson(historyType, proto.temporal.api.history.v1.History.fromObject(history));
}

/** A JSON history back as the History object `Worker.runReplayHistory` takes. */
export function historyFromJson(json: unknown): History {
  const loaded = protojson.fromJson(historyType, json, { ignoreUnknownFields: true });
  if (loaded === null || typeof loaded !== 'object') throw new TypeError('not a history');
  return loaded as History;
}

/**
 * Every text a JSON history holds, payloads decoded: the strings of the JSON itself plus each base64 `data` field
 * decoded as UTF-8. What a person with the history could read, for checks that a secret is not in it.
 */
export function historyTexts(json: unknown): { strings: string[]; payloads: string[] } {
  const strings: string[] = [];
  const payloads: string[] = [];
  const walk = (value: unknown, key: string): void => {
    if (typeof value === 'string') {
      strings.push(value);
      if (key === 'data') payloads.push(Buffer.from(value, 'base64').toString('utf8'));
    } else if (Array.isArray(value)) {
      for (const v of value) walk(v, key);
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, k);
    }
  };
  walk(json, '');
  return { strings, payloads };
}
