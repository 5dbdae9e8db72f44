#!/usr/bin/env node
// Calls contextwm from Node.js with @grpc/grpc-js, the proto loaded at run time by
// @grpc/proto-loader: no generated code, no build step.
//
//   npm ci && node example.js 127.0.0.1:50051 [conversation_id]
//
// Appends three items to a conversation, asks for context under a token budget, checks that
// reading a conversation that does not exist fails with NOT_FOUND, and prints what it saw
// as one JSON object on stdout. Anything unexpected: a message on stderr and exit code 1.
//
// A server that requires them (docs/security.md) gets an API key and TLS from the variables
// the contextwm command line reads too:
//
//   CONTEXTWM_API_KEY   sent with every call as the metadata `authorization: Bearer <key>`
//   CONTEXTWM_TLS_CA    connect with TLS, trusting the server certificates this CA signed
//   CONTEXTWM_TLS_CERT  and CONTEXTWM_TLS_KEY: a client certificate, for mutual TLS
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

/** The repository's proto directory: the contract, loaded as is. */
const PROTO_ROOT = path.resolve(__dirname, "..", "..", "proto");

/** Seconds each call may take. */
const DEADLINE_SECONDS = 30;

/**
 * Loads contextwm.v1 from the proto file. Field names stay as the proto spells them
 * (keepCase), as in grpcurl's JSON; google/protobuf/timestamp.proto is built into
 * proto-loader, so only the repository's proto directory is needed.
 * @returns {grpc.ServiceClientConstructor} the ContextService client class
 */
function loadContextService() {
  const definition = protoLoader.loadSync("contextwm/v1/contextwm.proto", {
    includeDirs: [PROTO_ROOT],
    keepCase: true,
    // Seqs and counts are int64; as Numbers they stay exact far past any real conversation.
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const proto = /** @type {any} */ (grpc.loadPackageDefinition(definition));
  return proto.contextwm.v1.ContextService;
}

/**
 * The channel's credentials: TLS when any CONTEXTWM_TLS_* variable is set (with the system's
 * roots when CONTEXTWM_TLS_CA is not), plaintext otherwise.
 * @param {NodeJS.ProcessEnv} env the environment
 * @returns {grpc.ChannelCredentials} the credentials
 */
function channelCredentials(env) {
  const { CONTEXTWM_TLS_CA: ca, CONTEXTWM_TLS_CERT: cert, CONTEXTWM_TLS_KEY: key } = env;
  if (!ca && !cert && !key) {
    return grpc.credentials.createInsecure();
  }
  if (!cert !== !key) {
    throw new Error("CONTEXTWM_TLS_CERT and CONTEXTWM_TLS_KEY go together");
  }
  const read = (/** @type {string | undefined} */ file) => (file ? fs.readFileSync(file) : null);
  // createSsl(rootCerts, privateKey, certChain): null roots are the system's.
  return grpc.credentials.createSsl(read(ca), read(key), read(cert));
}

/**
 * The metadata sent with every call: the API key as `authorization: Bearer <key>`, if any.
 * Per call rather than as call credentials, which grpc-js sends over TLS channels only.
 * @param {NodeJS.ProcessEnv} env the environment
 * @returns {grpc.Metadata} the metadata
 */
function callMetadata(env) {
  const metadata = new grpc.Metadata();
  const apiKey = env.CONTEXTWM_API_KEY;
  if (apiKey) {
    metadata.set("authorization", `Bearer ${apiKey}`);
  }
  return metadata;
}

/**
 * Calls one unary method and resolves with its response.
 * @param {any} client a ContextService client
 * @param {grpc.Metadata} metadata sent with the call (the API key)
 * @param {string} method the method's name as in the proto, e.g. "Append"
 * @param {object} request the request as a plain object with the proto's field names
 * @returns {Promise<any>} the response as a plain object
 */
function call(client, metadata, method, request) {
  const deadline = new Date(Date.now() + DEADLINE_SECONDS * 1000);
  return new Promise((resolve, reject) => {
    client[method](
      request,
      metadata,
      { deadline },
      (/** @type {any} */ error, /** @type {any} */ response) =>
        error ? reject(error) : resolve(response),
    );
  });
}

/**
 * @param {string} target host:port of the server
 * @param {string} conversationId the conversation to append to
 * @returns {Promise<object>} the summary printed on stdout
 */
async function run(target, conversationId) {
  const ContextService = loadContextService();
  const client = new ContextService(target, channelCredentials(process.env));
  const metadata = callMetadata(process.env);
  try {
    const items = [
      { role: "user", content: "Deploy of billing-api failed on db-3. Why?" },
      {
        role: "tool",
        content: "ConnectionError: db-3:5432 refused connection (pool exhausted)",
        metadata: { client: "node" },
      },
      { role: "assistant", content: "The connection pool on db-3 is exhausted; raise max_conns." },
    ];
    const appended = [];
    for (const item of items) {
      // Append creates the conversation with the server's defaults on first use.
      const request = { conversation_id: conversationId, item };
      const response = await call(client, metadata, "Append", request);
      appended.push({
        seq: response.result.seq,
        token_count: response.result.token_count,
        flags: response.result.flags,
      });
    }
    const seqs = appended.map((a) => a.seq);
    if (seqs.some((seq, i) => i > 0 && seq <= seqs[i - 1])) {
      throw new Error(`seqs do not increase: ${seqs.join(", ")}`);
    }

    const context = await call(client, metadata, "GetContext", {
      conversation_id: conversationId,
      query: "why did the deploy fail?",
      max_tokens: 512,
    });
    if (context.tokens.total > context.tokens.budget) {
      throw new Error(`context over budget: ${context.tokens.total} > ${context.tokens.budget}`);
    }

    const missing = `${conversationId}-missing`;
    let notFound = null;
    try {
      await call(client, metadata, "GetConversation", { conversation_id: missing });
    } catch (error) {
      const e = /** @type {grpc.ServiceError} */ (error);
      if (e.code !== grpc.status.NOT_FOUND) {
        throw error;
      }
      notFound = { code: e.code, name: grpc.status[e.code], details: e.details };
    }
    if (notFound === null) {
      throw new Error(`GetConversation(${missing}) succeeded; expected NOT_FOUND`);
    }

    return {
      target,
      conversation_id: conversationId,
      appended,
      context: {
        text: context.text,
        query: context.query,
        budget: context.tokens.budget,
        total_tokens: context.tokens.total,
        encoding: context.tokens.encoding,
        recent_seqs: context.recent.map((/** @type {any} */ s) => s.item.seq),
        history_seqs: context.history.map((/** @type {any} */ s) => s.item.seq),
      },
      not_found: notFound,
    };
  } finally {
    client.close();
  }
}

async function main() {
  const [target, conversationId = "node-example"] = process.argv.slice(2);
  if (!target) {
    process.stderr.write("usage: node example.js HOST:PORT [CONVERSATION_ID]\n");
    process.exit(2);
  }
  try {
    const summary = await run(target, conversationId);
    process.stdout.write(JSON.stringify(summary, null, 2) + "\n");
  } catch (error) {
    const e = /** @type {any} */ (error);
    // A failed call says which status it got; anything else is a bug here: its stack.
    const reason =
      typeof e.code === "number" ? `${grpc.status[e.code]} (${e.code}): ${e.details}` : e.stack;
    process.stderr.write(`example.js: ${reason}\n`);
    process.exit(1);
  }
}

main();
