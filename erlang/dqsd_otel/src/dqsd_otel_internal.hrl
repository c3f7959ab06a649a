%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% Internal definitions shared by the dqsd_otel modules. Not part of the API:
%% callers treat a span context as opaque.

%% A span context: everything needed to export the span when it ends, so the
%% library keeps no per-span state anywhere else.
-record(dqsd_span, {
    %% 16-byte trace id; `undefined' when the span is not recording and has
    %% no parent (a non-recording span carries its parent's ids, so that
    %% the trace context passes through it).
    trace_id :: binary() | undefined,
    %% 8-byte span id; as trace_id.
    span_id :: binary() | undefined,
    %% 8-byte id of the parent span, `undefined' for a root span.
    parent_id :: binary() | undefined,
    %% Span name, which is also the probe name of its start event.
    name :: term(),
    %% Attributes as given by the caller (map or list of pairs).
    attributes :: map() | list(),
    %% Start time, erlang:monotonic_time(nanosecond) of the runtime system
    %% `clock'.
    start :: integer(),
    %% The runtime system that stamped `start' (#dqsd_queue.clock), and its
    %% erlang:time_offset(nanosecond) then: each one's monotonic time counts
    %% from its own start, so a span ended in another has its start moved
    %% into that one's time (dqsd_otel:finish/2).
    clock :: term(),
    time_offset = 0 :: integer(),
    %% false when the library was disabled (or not started) at start time,
    %% and for a remote context.
    recording :: boolean(),
    %% W3C trace context: the sampled flag (0 or 1), inherited from the
    %% parent and 1 for a root span; the tracestate, inherited unchanged.
    trace_flags = 1 :: 0 | 1,
    trace_state = <<>> :: binary(),
    %% true for a context extracted from a remote parent's headers: not a
    %% span of this process, never exported, only a parent.
    remote = false :: boolean(),
    %% true when the parent is remote (OTLP span flags, bit 9).
    parent_remote = false :: boolean()
}).

%% An export request of the exporter (dqsd_otel_exporter), delivered or
%% waiting to be retried.
-record(dqsd_request, {
    kind :: spans | events,
    url :: string(),
    body :: binary(),
    count :: pos_integer(),
    %% The start events in the body (for `events'), for elide_pending/1.
    starts = [] :: [tuple()],
    %% The erlang:time_offset(nanosecond) the body was encoded with, which
    %% a body encoded again (elide_starts/3) keeps.
    offset = 0 :: integer()
}).

%% persistent_term key of the queue handle, written once when the
%% application starts and erased when it stops.
-define(PT_QUEUE, {dqsd_otel, queue}).

%% persistent_term key of the runtime system's identity (#dqsd_queue.clock),
%% written when the application first starts and kept for the life of the
%% runtime system, across restarts of the application.
-define(PT_CLOCK, {dqsd_otel, clock}).

%% The queue handle, created by the supervisor and kept in persistent_term.
-record(dqsd_queue, {
    %% ordered_set keyed by erlang:unique_integer([monotonic]), so the
    %% exporter drains items in the order they were queued (a span's start
    %% event always before the span). Owned by the supervisor.
    tab :: ets:tid(),
    %% Slots ?A_SIZE and ?A_ENABLED below.
    atomics :: atomics:atomics_ref(),
    %% Slots ?C_* below.
    counters :: counters:counters_ref(),
    %% Items per batch: callers wake the exporter at each multiple.
    batch_size :: pos_integer(),
    %% Most items queued; more are dropped and counted.
    limit :: pos_integer(),
    %% Most bytes queued (the items' erlang:external_size/1); an item that
    %% would take the queue beyond it is dropped and counted.
    max_bytes :: pos_integer(),
    %% This runtime system, as a term no other one has: its node name (two
    %% runtime systems that are not distributed have the same), OS process
    %% id and the system time at which the term was made.
    clock :: term()
}).

%% Atomics slots.
-define(A_SIZE, 1).      % items in the queue (start events + spans)
-define(A_ENABLED, 2).   % 1 = recording, 0 = switched off
-define(A_BYTES, 3).     % bytes in the queue (the items' external size)
-define(A_COUNT, 3).

%% Counter slots (see dqsd_otel:stats/0).
-define(C_EXPORTED_SPANS, 1).
-define(C_EXPORTED_EVENTS, 2).
-define(C_DROPPED_SPANS, 3).
-define(C_DROPPED_EVENTS, 4).
-define(C_FAILED_SPANS, 5).
-define(C_FAILED_EVENTS, 6).
-define(C_EXPORT_REQUESTS, 7).
-define(C_EXPORT_ERRORS, 8).
-define(C_EXPORTER_RESTARTS, 9).
-define(C_OVERSIZED_SPANS, 10).
-define(C_OVERSIZED_EVENTS, 11).
-define(C_ELIDED_EVENTS, 12).
-define(C_COUNT, 12).

%% Registered names of the supervisor, the exporter and its watchdog.
-define(SUP, dqsd_otel_sup).
-define(EXPORTER, dqsd_otel_exporter).
-define(WATCHDOG, dqsd_otel_watchdog).

%% Process dictionary keys of the calling process.
-define(PD_CURRENT, '$dqsd_otel_current_span').
-define(PD_RNG, '$dqsd_otel_rng').

%% Attribute and event names of the ΔQ conventions
%% (docs/contract/start-event.json for the start events).
-define(START_EVENT_NAME, <<"deltaq.span.start">>).
-define(ATTR_PROBE, <<"deltaq.probe">>).
-define(ATTR_SPAN_NAME, <<"deltaq.span.name">>).
-define(ATTR_TRACESTATE, <<"deltaq.tracestate">>).
%% The batch form: the starts of many spans of one probe in one record.
-define(STARTS_EVENT_NAME, <<"deltaq.span.starts">>).
-define(ATTR_STARTS, <<"deltaq.starts">>).
-define(ATTR_STARTS_THRESHOLDS, <<"deltaq.starts.thresholds">>).
%% Most entries in one batch record.
-define(MAX_STARTS, 65536).
%% Longest probe name, in bytes as sent: the collector's components refuse
%% a longer one in their configurations, and refuse a start event naming
%% one (sdk/deltaqstart's maxProbeLength).
-define(MAX_PROBE_BYTES, 256).
-define(ATTR_FAILED, <<"deltaq.failed">>).

%% OTLP enum values (opentelemetry-proto trace.proto).
-define(SPAN_KIND_INTERNAL, 1).
%% SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK and SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK.
-define(SPAN_FLAGS_HAS_IS_REMOTE, 16#100).
-define(SPAN_FLAGS_IS_REMOTE, 16#200).
-define(STATUS_CODE_ERROR, 2).
%% SEVERITY_NUMBER_INFO (opentelemetry-proto logs.proto): the start events'
%% severity, as sdk/deltaqstart gives its own. The collector does not read
%% it, but a log pipeline that keeps the records from some severity up (as
%% opentelemetry-go-contrib's minsev processor does, from INFO by default)
%% drops a record without one (0, unspecified).
-define(SEVERITY_NUMBER_INFO, 9).
