/**
 * The web console on the metrics HTTP listener (src/server/metrics-http.ts): the page at /console/
 * (HTML, TypeScript and CSS in ./app, bundled by Bun's HTML import, so they ship inside the
 * compiled executable and load nothing from elsewhere) and its read-only data under /console/api/.
 *
 * Access (docs/console.md "Who can see it"):
 * - On a plain HTTP listener the data answers only clients on this machine: the peer address is
 *   loopback AND the Host header names a loopback address (the second check stops DNS rebinding: a
 *   web page from elsewhere whose name resolves to 127.0.0.1 reaches the port but sends its own
 *   Host). Passwords never cross a network in clear.
 * - With --users-file every data request also needs a login (./console-auth.ts), loopback or not.
 * - On a TLS listener (--tls-cert) with users, other machines are served too, after a login.
 *
 * Owns: the routes, the access check, the JSON answers. Offers no action: nothing here writes (the
 * only POSTs are the login and the logout).
 */
import type { Server } from "bun";
import { crc32cImplementation } from "../../ffi/crc32c.ts";
import {
  ACL_OPERATION,
  type AclResourceType,
  ANONYMOUS_PRINCIPAL,
  CLUSTER_RESOURCE_NAME,
  clientHost,
  RESOURCE_TYPE,
} from "../auth/acl.ts";
import {
  BooblikError,
  InvalidArgumentError,
  OffsetOutOfRangeError,
  UnknownTopicOrPartitionError,
} from "../domain/errors.ts";
import { CONSOLE_RECORDS_PAGE_MAX, OFFSET_MAX } from "../domain/limits.ts";
import { BOOBLIK_VERSION } from "../domain/version.ts";
import { json, problem } from "./answers.ts";
import consolePage from "./app/index.html";
import type { ConsoleAuth } from "./console-auth.ts";
import { integerParameter, readRecordsPage } from "./records.ts";
import { ConsoleSampler, type ConsoleTargets, STREAM_VIEWS, type StreamView } from "./sampler.ts";

export type { ConsoleTargets } from "./sampler.ts";

/** 127.0.0.0/8, ::1, and IPv4-mapped loopback as Bun reports it on a dual-stack socket. */
export function isLoopbackAddress(address: string): boolean {
  const bare = address.startsWith("::ffff:") ? address.slice(7) : address;
  return bare === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** A Host header naming this machine: localhost, 127.x.y.z or [::1], with or without a port. */
export function isLoopbackHost(host: string | null): boolean {
  if (host === null) return false;
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d+$/, "");
  return name === "localhost" || name === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

export interface WebConsole {
  /** Routes for Bun.serve: the page and its bundled assets. */
  readonly routes: Record<string, typeof consolePage | Response>;
  /** Answers a /console/api/ request, or returns undefined for a path that is not the console's. */
  handle(request: Request, server: Server<undefined>): Response | Promise<Response> | undefined;
  readonly sampler: ConsoleSampler;
  stop(): void;
}

export interface ConsoleAccess {
  /** Logins, when the broker has users (--users-file). */
  auth?: ConsoleAuth;
  /** The listener speaks TLS: with users, other machines may log in. */
  tls: boolean;
}

export function createConsole(targets: ConsoleTargets, access: ConsoleAccess = { tls: false }): WebConsole {
  const sampler = new ConsoleSampler(targets);
  const startedAtMs = Date.now() - process.uptime() * 1000;

  function overview(): unknown {
    const broker = targets.broker;
    const defaults = broker?.topicDefaults;
    return {
      version: BOOBLIK_VERSION,
      startedAtMs,
      uptimeSeconds: process.uptime(),
      ready: targets.ready,
      dataDir: broker?.dataDir ?? null,
      crc32c: crc32cImplementation,
      defaults:
        defaults === undefined
          ? null
          : {
              durability: defaults.durability,
              flushIntervalMs: defaults.flushIntervalMs,
              writeMode: defaults.writeMode,
              segmentBytes: defaults.segmentBytes,
              maxRecordBytes: defaults.maxRecordBytes,
              retentionBytes: defaults.retentionBytes,
              retentionMs: defaults.retentionMs,
            },
      recovery: broker?.recoveryProgress.done ? broker.openReport : null,
      recoveryProgress: broker?.recoveryProgress ?? null,
      readOnlyPartitions: broker === undefined || broker.isClosed ? 0 : broker.readOnlyPartitionCount(),
      streams: { open: sampler.openStreams },
    };
  }

  function stream(request: Request, view: StreamView, group: string): Response {
    const body = sampler.openStream(view, request.signal, group);
    if (body === undefined) {
      return problem(503, "too many console streams are open (CONSOLE_STREAMS_MAX); close a tab and retry");
    }
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        // A reverse proxy in front (nginx) must pass each event on at once, not buffer the stream.
        "x-accel-buffering": "no",
      },
    });
  }

  return {
    routes: {
      "/console/": consolePage,
      "/console": new Response(null, { status: 308, headers: { location: "/console/" } }),
    },
    sampler,
    stop: () => sampler.stop(),
    handle(request, server) {
      const url = new URL(request.url);
      if (!url.pathname.startsWith("/console/api/")) return undefined;
      const peer = clientHost(server.requestIP(request)?.address ?? "");
      const local = isLoopbackAddress(peer) && isLoopbackHost(request.headers.get("host"));
      if (!local && !(access.tls && access.auth !== undefined)) {
        return problem(
          403,
          "the console answers only this machine (a loopback peer and Host) unless its listener speaks TLS and the broker has users (--tls-cert and --users-file); reach it through an SSH tunnel",
        );
      }
      const route = url.pathname.slice("/console/api/".length);
      const auth = access.auth;
      if (route === "login" || route === "logout") {
        if (request.method !== "POST") return problem(405, `${route}: POST only`);
        if (auth === undefined)
          return problem(404, "this broker has no users (--users-file): no login needed");
        return route === "login" ? auth.login(request, peer) : auth.logout(request);
      }
      if (request.method !== "GET") return problem(405, "the console is read-only: GET only");
      if (auth === undefined) return answer(request, url, route, peer);
      return auth
        .authenticate(request, peer)
        .then((result) =>
          "refusal" in result ? result.refusal : answer(request, url, route, peer, result.user),
        );
    },
  };

  /**
   * A data request that passed the access check; `user` is who logged in (undefined: no users).
   * With --authorizer acl the console asks the ACLs the protocols ask, for the principal `User:<user>`
   * (`User:ANONYMOUS` without users) from the peer's address: the live views and the overview show
   * the whole broker, so they need DESCRIBE on the cluster; the topic list shows the topics the
   * principal may DESCRIBE, the record browser needs READ on the topic, the groups list shows the
   * groups it may DESCRIBE and a group's page needs DESCRIBE on the group.
   */
  function answer(request: Request, url: URL, route: string, peer: string, user?: string): Response {
    if (route === "session") return json({ loginRequired: access.auth !== undefined, user: user ?? null });
    const principal = user === undefined ? ANONYMOUS_PRINCIPAL : `User:${user}`;
    const acls = targets.broker?.acls;
    const may = (operation: number, type: AclResourceType, name: string) =>
      acls === undefined || !acls.enforcing || acls.allowed(principal, peer, operation, { type, name });
    const denied = (operation: number, type: AclResourceType, name: string) =>
      problem(403, acls!.denied("console", principal, peer, operation, { type, name }).message);
    if (
      (route === "overview" || route === "stream") &&
      !may(ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME)
    ) {
      return denied(ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.CLUSTER, CLUSTER_RESOURCE_NAME);
    }
    sampler.start();
    if (route === "overview") return json(overview());
    if (route === "stream") {
      const view = (url.searchParams.get("view") ?? "overview") as StreamView;
      if (!STREAM_VIEWS.includes(view)) return problem(400, `view must be one of ${STREAM_VIEWS.join(", ")}`);
      const group = url.searchParams.get("group") ?? "";
      if (view === "group" && group === "") return problem(400, "view=group needs a group parameter");
      return stream(request, view, group);
    }
    const broker = targets.broker;
    if (route === "topic-names" || route === "records" || route === "groups" || route === "group") {
      if (broker === undefined || broker.isClosed || !broker.recoveryProgress.done) {
        return problem(503, "the data directory is still opening");
      }
      try {
        // A group's committed offsets (and the lag and counts made of them) only for the topics the
        // principal may DESCRIBE, as OffsetFetch answers on both protocols. The group page showed
        // every topic's offsets and log end to anyone with DESCRIBE on the group (a security
        // helper's run, 2026-12-03).
        const visible = (topic: string) => may(ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, topic);
        if (route === "groups") {
          return json(
            sampler
              .groupRows(visible)
              .filter((row) => may(ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, row.group)),
          );
        }
        if (route === "group") {
          const group = url.searchParams.get("group");
          if (group === null || group === "") throw new InvalidArgumentError("group is required");
          if (!may(ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, group)) {
            return denied(ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.GROUP, group);
          }
          const detail = sampler.groupDetail(group, visible);
          if (detail === null) return problem(404, `no consumer group ${JSON.stringify(group)}`);
          // The lag history sums every committed topic: shown only when nothing was left out.
          const whole = broker.offsets.committedOf(group).length === detail.offsets.length;
          return json({ ...detail, lagHistory: whole ? sampler.lagHistoryOf(group) : [] });
        }
        if (route === "topic-names") {
          return json(
            broker
              .listTopics()
              .filter((topic) => may(ACL_OPERATION.DESCRIBE, RESOURCE_TYPE.TOPIC, topic.name))
              .map((topic) => ({ name: topic.name, partitions: topic.partitions.length })),
          );
        }
        const query = url.searchParams;
        const topic = query.get("topic");
        if (topic === null || topic === "") throw new InvalidArgumentError("topic is required");
        // Before the lookup, so that a refusal does not tell whether the topic exists.
        if (!may(ACL_OPERATION.READ, RESOURCE_TYPE.TOPIC, topic)) {
          return denied(ACL_OPERATION.READ, RESOURCE_TYPE.TOPIC, topic);
        }
        const number = (name: string, max = OFFSET_MAX) => integerParameter(name, query.get(name), 0, max);
        const timestampMs = integerParameter("timestampMs", query.get("timestampMs"), -1, OFFSET_MAX);
        const offset = number("offset");
        const before = number("before");
        const limit = number("limit", CONSOLE_RECORDS_PAGE_MAX);
        return json(
          readRecordsPage(broker, {
            topic,
            partition: number("partition", 2 ** 31 - 1) ?? 0,
            ...(offset === undefined ? {} : { offset }),
            ...(before === undefined ? {} : { before }),
            ...(timestampMs === undefined ? {} : { timestampMs }),
            ...(limit === undefined ? {} : { limit }),
          }),
        );
      } catch (error) {
        if (error instanceof UnknownTopicOrPartitionError) return problem(404, error.message);
        if (error instanceof InvalidArgumentError || error instanceof OffsetOutOfRangeError) {
          return problem(400, error.message);
        }
        if (error instanceof BooblikError) return problem(500, error.message);
        throw error;
      }
    }
    return problem(404, `no console API ${JSON.stringify(route)}`);
  }
}
