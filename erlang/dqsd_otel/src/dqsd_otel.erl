%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc ΔQSD instrumentation for Erlang, speaking OTLP.
%%
%% A span marks one outcome instance: `start_span/1,2' stamps the start,
%% queues a start event (so a collector can time out an instance that never
%% ends, see docs/design.md, "Outcome instances"; the exporter sends the
%% start events of a request as one `deltaq.span.starts' log record per
%% probe, or one `deltaq.span.start' record each) and
%% returns a span context; `end_span/1' or `fail_span/1,2' stamps the end and
%% queues the span. The calling process only stamps, stores and returns: the
%% exporter (`dqsd_otel_exporter') encodes and sends the queue in batches as
%% OTLP/HTTP JSON, and when the queue is full an item is dropped and counted
%% rather than making the caller wait.
%%
%% This replaces the wrapper of the thesis (section 5.2, appendix A.4), which
%% spawned one process per span to time it out and sent text lines to the
%% oscilloscope; here timing out is the collector's job and a span context
%% is a plain value.
%%
%% The parent of a new span is the calling process's current span, if any,
%% or the one given to `start_span/3' or `with_span/4'. `with_span' makes its
%% span current while its fun runs; to give spans in another process the
%% right parent, pass the context and call `set_current_span/1' there.
%%
%% Across services the context travels in W3C Trace Context headers:
%% `extract/1' reads the remote parent from a request's headers, and
%% `inject/2' writes a span's context into an outgoing request's headers
%% (see `dqsd_otel_tracecontext').
-module(dqsd_otel).

-include("dqsd_otel_internal.hrl").

-export([
    start_span/1, start_span/2, start_span/3,
    end_span/1,
    fail_span/1, fail_span/2,
    with_span/2, with_span/3, with_span/4,
    extract/1, inject/2,
    current_span/0, set_current_span/1,
    trace_id/1, span_id/1,
    enable/0, disable/0, is_enabled/0,
    flush/0, flush/1,
    stats/0
]).

-export_type([span_ctx/0, attributes/0, attribute_key/0, attribute_value/0,
              headers/0]).

-opaque span_ctx() :: #dqsd_span{}.
%% A span context, returned by `start_span/1,2,3' and `extract/1'. A plain
%% value: it can be sent to other processes.

-type headers() :: dqsd_otel_tracecontext:headers().
%% HTTP headers: a list of `{Name, Value}' or a map, names in any case,
%% names and values binaries or strings.

-type attribute_key() :: binary() | atom() | string().
-type attribute_value() ::
    binary() | string() | atom() | integer() | float()
    | [attribute_value()] | #{attribute_key() => attribute_value()}.
%% Binaries and printable lists are strings; `true'/`false' are booleans,
%% other atoms strings; integers in the signed 64-bit range are ints (others
%% are sent as decimal strings); non-printable lists are arrays and maps are
%% key-value lists. Any other term is sent as its printed form.
-type attributes() :: #{attribute_key() => attribute_value()}
                    | [{attribute_key(), attribute_value()}].

%% @equiv start_span(Name, #{})
-spec start_span(Name :: binary() | atom() | string()) -> span_ctx().
start_span(Name) ->
    start_span(Name, #{}).

%% @doc Starts a span named `Name', which is also the probe name of its start
%% event, and queues the start event: none for a name that names no probe,
%% empty or longer than 256 bytes as sent (`dqsd_otel_otlp:probe/1'; the
%% collector refuses such a probe name), though the span is exported all
%% the same. The parent is the calling process's
%% current span (see `set_current_span/1'); the new span does not become
%% current. When the library is switched off or not running, the context
%% returned is not recording and ending it does nothing.
-spec start_span(Name :: binary() | atom() | string(), attributes()) -> span_ctx().
start_span(Name, Attributes) ->
    start_span(Name, Attributes, get(?PD_CURRENT)).

%% @doc As `start_span/2', with `Parent' as the parent instead of the
%% current span: a span context of this process or another, or a remote
%% parent from `extract/1'; `undefined' starts a new trace. The new span
%% inherits the parent's trace id, sampled flag and tracestate.
%%
%% A span that is not recording (the library is off) carries its parent's
%% ids, so that the trace context passes through it: injected into a
%% request, it continues the parent's trace.
-spec start_span(Name :: binary() | atom() | string(), attributes(),
                 Parent :: span_ctx() | undefined) -> span_ctx().
start_span(Name, Attributes, Parent) ->
    case persistent_term:get(?PT_QUEUE, undefined) of
        #dqsd_queue{atomics = Atomics} = Queue ->
            case atomics:get(Atomics, ?A_ENABLED) of
                1 -> start_recording(Queue, Name, Attributes, Parent);
                _ -> not_recording(Name, Attributes, Parent)
            end;
        undefined ->
            not_recording(Name, Attributes, Parent)
    end.

start_recording(#dqsd_queue{clock = Clock} = Queue, Name, Attributes, Parent) ->
    Span = case Parent of
               #dqsd_span{trace_id = T, span_id = P, trace_flags = F,
                          trace_state = TS, remote = Remote} when is_binary(T) ->
                   #dqsd_span{trace_id = T, span_id = new_span_id(), parent_id = P,
                              trace_flags = F, trace_state = TS,
                              parent_remote = Remote};
               _ ->
                   {T, S} = new_trace_and_span_ids(),
                   #dqsd_span{trace_id = T, span_id = S}
           end,
    Start = erlang:monotonic_time(nanosecond),
    case dqsd_otel_otlp:probe(Name) of
        none ->
            ok;
        Probe ->
            enqueue(Queue, {start, Span#dqsd_span.trace_id, Span#dqsd_span.span_id, Probe, Start,
                            Span#dqsd_span.trace_state},
                    ?C_DROPPED_EVENTS)
    end,
    Span#dqsd_span{name = Name, attributes = Attributes, start = Start,
                   clock = Clock, time_offset = erlang:time_offset(nanosecond),
                   recording = true}.

%% Nothing to stamp: a non-recording span is never exported. It keeps the
%% parent's context (its ids included), to pass it on.
not_recording(Name, Attributes, #dqsd_span{trace_id = T} = Parent) when is_binary(T) ->
    Parent#dqsd_span{parent_id = undefined, name = Name, attributes = Attributes,
                     start = 0, recording = false, parent_remote = false};
not_recording(Name, Attributes, _) ->
    #dqsd_span{name = Name, attributes = Attributes, start = 0, recording = false}.

%% @doc Ends a span successfully: its end is stamped and it is queued for
%% export. Ending a non-recording context, or `undefined', does nothing.
%% Ending the same context twice exports it twice.
-spec end_span(span_ctx() | undefined) -> ok.
end_span(#dqsd_span{recording = true} = Ctx) ->
    finish(Ctx, ok);
end_span(_) ->
    ok.

%% @equiv fail_span(Ctx, undefined)
-spec fail_span(span_ctx() | undefined) -> ok.
fail_span(Ctx) ->
    fail_span(Ctx, undefined).

%% @doc Ends a span as a failed outcome instance: status ERROR (the failure
%% rule the collector's deltaq processor applies by default), attribute
%% `deltaq.failed' = true, and `Reason' (unless `undefined') as the status
%% message: binaries are sent as they are, other terms in printed form.
-spec fail_span(span_ctx() | undefined, Reason :: term()) -> ok.
fail_span(#dqsd_span{recording = true} = Ctx, Reason) ->
    finish(Ctx, {error, Reason});
fail_span(_, _) ->
    ok.

%% @equiv with_span(Name, #{}, Fun)
-spec with_span(Name :: binary() | atom() | string(), fun(() -> Result)) -> Result.
with_span(Name, Fun) ->
    with_span(Name, #{}, Fun).

%% @doc Runs `Fun' in a span that is the calling process's current span
%% while `Fun' runs. Returns what `Fun' returns and ends the span; if `Fun'
%% raises, the span fails (status message `Class:Reason', plus an
%% `exception' event) and the exception is raised again with its stack trace.
-spec with_span(Name :: binary() | atom() | string(), attributes(),
                fun(() -> Result)) -> Result.
with_span(Name, Attributes, Fun) ->
    with_span(Name, Attributes, get(?PD_CURRENT), Fun).

%% @doc As `with_span/3', with `Parent' as the parent (see `start_span/3'):
%% for instance the remote parent of a request, from `extract/1'. The
%% current span is restored when `Fun' returns, so a process that handles
%% one request after another keeps no request's context.
-spec with_span(Name :: binary() | atom() | string(), attributes(),
                Parent :: span_ctx() | undefined, fun(() -> Result)) -> Result.
with_span(Name, Attributes, Parent, Fun) ->
    Ctx = start_span(Name, Attributes, Parent),
    Previous = put(?PD_CURRENT, Ctx),
    try Fun() of
        Result ->
            restore_current(Previous),
            end_span(Ctx),
            Result
    catch
        Class:Reason:Stack ->
            restore_current(Previous),
            case Ctx of
                #dqsd_span{recording = true} ->
                    finish(Ctx, {exception, Class, Reason, Stack});
                _ ->
                    ok
            end,
            erlang:raise(Class, Reason, Stack)
    end.

restore_current(undefined) -> erase(?PD_CURRENT);
restore_current(Previous) -> put(?PD_CURRENT, Previous).

%% @doc The calling process's current span, or `undefined'.
-spec current_span() -> span_ctx() | undefined.
current_span() ->
    get(?PD_CURRENT).

%% @doc Makes `Ctx' the calling process's current span, so that spans it
%% starts next are its children; `undefined' clears it. Returns the previous
%% current span. This is how a span context passed to another process
%% becomes the parent of the spans started there.
-spec set_current_span(span_ctx() | undefined) -> span_ctx() | undefined.
set_current_span(undefined) ->
    erase(?PD_CURRENT);
set_current_span(#dqsd_span{} = Ctx) ->
    put(?PD_CURRENT, Ctx).

%% @doc The span's trace id as 32 lowercase hex digits (as in OTLP and W3C
%% trace context), or `undefined' for a non-recording span without a parent
%% (one with a parent carries the parent's ids).
-spec trace_id(span_ctx()) -> binary() | undefined.
trace_id(#dqsd_span{trace_id = undefined}) -> undefined;
trace_id(#dqsd_span{trace_id = Id}) -> dqsd_otel_otlp:hex(Id).

%% @doc The span's id as 16 lowercase hex digits, or `undefined' as for
%% `trace_id/1'. For a remote context, the remote parent's id.
-spec span_id(span_ctx()) -> binary() | undefined.
span_id(#dqsd_span{span_id = undefined}) -> undefined;
span_id(#dqsd_span{span_id = Id}) -> dqsd_otel_otlp:hex(Id).

%% @doc The remote parent of a request: the W3C Trace Context `traceparent'
%% and `tracestate' of `Headers', as a context to give to `start_span/3' or
%% `with_span/4' (or to make current with `set_current_span/1'). It is not
%% a span of this process: ending it does nothing. `undefined' when the
%% headers hold no valid `traceparent', or several: the trace restarts.
-spec extract(headers()) -> span_ctx() | undefined.
extract(Headers) ->
    case dqsd_otel_tracecontext:extract(Headers) of
        {TraceId, ParentId, Sampled, TraceState} ->
            #dqsd_span{trace_id = TraceId, span_id = ParentId, name = undefined,
                       attributes = #{}, start = 0, recording = false,
                       trace_flags = Sampled, trace_state = TraceState,
                       remote = true};
        undefined ->
            undefined
    end.

%% @doc `Headers' with the W3C Trace Context of `Ctx' for an outgoing
%% request: `traceparent' naming `Ctx' as the parent (with the sampled flag
%% the trace came with, 1 for a trace started here), and `tracestate' as
%% received, replacing any fields of those names. `Headers' unchanged when
%% `Ctx' is `undefined' or a non-recording span without a parent. Raises
%% `badarg' when `Headers' is neither a proper list nor a map, whatever
%% `Ctx' is, so that the mistake shows while the library is switched off
%% too.
-spec inject(span_ctx() | undefined, headers()) -> headers().
inject(Ctx, Headers) ->
    dqsd_otel_tracecontext:is_headers(Headers) orelse erlang:error(badarg, [Ctx, Headers]),
    case Ctx of
        #dqsd_span{trace_id = TraceId, span_id = SpanId, trace_flags = Sampled,
                   trace_state = TraceState} when is_binary(TraceId) ->
            dqsd_otel_tracecontext:inject({TraceId, SpanId, Sampled, TraceState}, Headers);
        _ ->
            Headers
    end.

%% @doc Switches recording on (the thesis's `start_stub' command, 5.2.3).
-spec enable() -> ok | {error, not_started}.
enable() -> set_enabled(1).

%% @doc Switches recording off: spans started from now on are not recording
%% and cost almost nothing; spans already started are still exported when
%% they end (the thesis's `stop_stub').
-spec disable() -> ok | {error, not_started}.
disable() -> set_enabled(0).

set_enabled(Value) ->
    case persistent_term:get(?PT_QUEUE, undefined) of
        #dqsd_queue{atomics = Atomics} ->
            atomics:put(Atomics, ?A_ENABLED, Value);
        undefined ->
            {error, not_started}
    end.

%% @doc Whether spans started now are recorded.
-spec is_enabled() -> boolean().
is_enabled() ->
    case persistent_term:get(?PT_QUEUE, undefined) of
        #dqsd_queue{atomics = Atomics} ->
            atomics:get(Atomics, ?A_ENABLED) =:= 1;
        undefined ->
            false
    end.

%% @equiv flush(10000)
-spec flush() -> ok | {error, term()}.
flush() ->
    flush(10000).

%% @doc Exports what is queued now, one attempt per request (no backoff), and
%% returns when done: `ok' if everything was delivered, otherwise
%% `{error, {not_exported, #{spans := N, events := M}}}', or
%% `{error, timeout}' after `Timeout' milliseconds, or `{error, not_started}'
%% when no exporter is running (the application is not started, or the
%% watchdog has yet to restart a stopped exporter), or
%% `{error, {exporter_exited, Reason}}' when it stopped during the call
%% (what it had taken from the queue is lost). For tests and shutdown;
%% the exporter flushes on its own.
-spec flush(timeout()) -> ok | {error, term()}.
flush(Timeout) ->
    try
        gen_server:call(?EXPORTER, flush, Timeout)
    catch
        exit:{timeout, _} -> {error, timeout};
        exit:{noproc, _} -> {error, not_started};
        %% The exporter stopped (was killed, say) during the call: the
        %% caller gets an answer, not the exporter's exit.
        exit:{Reason, {gen_server, call, _}} -> {error, {exporter_exited, Reason}}
    end.

%% @doc Counters since the application started: `queued' (items waiting now)
%% and `queued_bytes' (their size), `exported_spans', `exported_events',
%% `dropped_spans' and `dropped_events' (the queue was full, by count or by
%% bytes), `oversized_spans' and `oversized_events' (one alone encoded to
%% more than `max_request_bytes': dropped, and the items of its batch sent
%% without it), `failed_spans' and `failed_events' (export gave up after its
%% retries or the collector refused them, whole or in a partial success),
%% `export_requests' and `export_errors' (failed attempts, retried or not),
%% `exporter_restarts' (exporters started again by the watchdog after the
%% previous one stopped), `elided_events' (start events
%% not sent because their span went in the same export round, the batches
%% queued when it began, or was queued while their request waited to be
%% retried).
-spec stats() -> #{atom() => non_neg_integer()}.
stats() ->
    case persistent_term:get(?PT_QUEUE, undefined) of
        #dqsd_queue{atomics = Atomics, counters = Counters} ->
            C = fun(I) -> counters:get(Counters, I) end,
            #{queued => atomics:get(Atomics, ?A_SIZE),
              queued_bytes => atomics:get(Atomics, ?A_BYTES),
              exported_spans => C(?C_EXPORTED_SPANS),
              exported_events => C(?C_EXPORTED_EVENTS),
              dropped_spans => C(?C_DROPPED_SPANS),
              dropped_events => C(?C_DROPPED_EVENTS),
              failed_spans => C(?C_FAILED_SPANS),
              failed_events => C(?C_FAILED_EVENTS),
              export_requests => C(?C_EXPORT_REQUESTS),
              export_errors => C(?C_EXPORT_ERRORS),
              exporter_restarts => C(?C_EXPORTER_RESTARTS),
              oversized_spans => C(?C_OVERSIZED_SPANS),
              oversized_events => C(?C_OVERSIZED_EVENTS),
              elided_events => C(?C_ELIDED_EVENTS)};
        undefined ->
            #{}
    end.

%%--------------------------------------------------------------------
%% The caller's path: stamp, store, return.

finish(#dqsd_span{} = Ctx, Status) ->
    End = erlang:monotonic_time(nanosecond),
    case persistent_term:get(?PT_QUEUE, undefined) of
        undefined -> ok;
        Queue -> enqueue(Queue, {span, local_start(Ctx, Queue), End, Status},
                         ?C_DROPPED_SPANS)
    end.

%% The span with its start in this runtime system's monotonic time. A
%% context is a plain value, sent to a process on another node as to a
%% local one, but monotonic time is the runtime system's own, counted from
%% its start: a span started on a node up for a day and ended on one up for
%% an hour lasted minus 23 hours, and its timestamps were off by as much.
%% Through Unix time (each one's time offset), the start is as right as the
%% two system clocks agree. A span ended where it started keeps the
%% monotonic difference as its duration, whatever the system clock did
%% meanwhile.
local_start(#dqsd_span{clock = Clock} = Ctx, #dqsd_queue{clock = Clock}) ->
    Ctx;
local_start(#dqsd_span{start = Start, time_offset = Offset} = Ctx,
            #dqsd_queue{clock = Clock}) ->
    Here = erlang:time_offset(nanosecond),
    Ctx#dqsd_span{start = Start + Offset - Here, clock = Clock, time_offset = Here}.

%% Reserves a place in the bounded queue, then stores the item. A full queue
%% (`queue_limit' items or `queue_max_bytes' bytes) drops the item and counts
%% it: the caller never waits for the exporter. The exporter is woken when a
%% batch is ready; otherwise it runs on its timer.
enqueue(Queue, Item, DropCounter) ->
    try
        store(Queue, Item, DropCounter)
    catch
        %% The application is stopping and the table is gone.
        error:badarg -> ok
    end.

%% An item's size is its external (term_to_binary) size: a traversal of the
%% term, not a copy, and the bytes of its binaries, so that one with a
%% 25 MiB attribute takes 25 MiB of the queue's bytes.
store(#dqsd_queue{tab = Tab, atomics = Atomics, counters = Counters,
                  batch_size = Batch, limit = Limit, max_bytes = MaxBytes},
      Item, DropCounter) ->
    Size = erlang:external_size(Item),
    case atomics:add_get(Atomics, ?A_SIZE, 1) of
        N when N > Limit ->
            atomics:sub(Atomics, ?A_SIZE, 1),
            counters:add(Counters, DropCounter, 1);
        N ->
            case atomics:add_get(Atomics, ?A_BYTES, Size) of
                Bytes when Bytes > MaxBytes ->
                    atomics:sub(Atomics, ?A_BYTES, Size),
                    atomics:sub(Atomics, ?A_SIZE, 1),
                    counters:add(Counters, DropCounter, 1);
                _ ->
                    ets:insert(Tab, {erlang:unique_integer([monotonic]), Item, Size}),
                    case N rem Batch of
                        0 -> wake_exporter();
                        _ -> ok
                    end
            end
    end.

wake_exporter() ->
    case whereis(?EXPORTER) of
        undefined -> ok;
        Pid -> Pid ! export, ok
    end.

%% Trace and span ids from a per-process MWC59 generator (rand:mwc59/1,
%% 32 bits of each step), kept apart from the process's own `rand' state so
%% that instrumentation never perturbs (or repeats) an application's seeded
%% random stream. All-zero ids are invalid in OTLP and drawn again.
new_trace_and_span_ids() ->
    X1 = rand:mwc59(rng()), X2 = rand:mwc59(X1), X3 = rand:mwc59(X2),
    X4 = rand:mwc59(X3), X5 = rand:mwc59(X4), X6 = rand:mwc59(X5),
    put(?PD_RNG, X6),
    case {<<(rand:mwc59_value32(X1)):32, (rand:mwc59_value32(X2)):32,
            (rand:mwc59_value32(X3)):32, (rand:mwc59_value32(X4)):32>>,
          <<(rand:mwc59_value32(X5)):32, (rand:mwc59_value32(X6)):32>>} of
        {<<0:128>>, _} -> new_trace_and_span_ids();
        {_, <<0:64>>} -> new_trace_and_span_ids();
        Ids -> Ids
    end.

new_span_id() ->
    X1 = rand:mwc59(rng()), X2 = rand:mwc59(X1),
    put(?PD_RNG, X2),
    case <<(rand:mwc59_value32(X1)):32, (rand:mwc59_value32(X2)):32>> of
        <<0:64>> -> new_span_id();
        Id -> Id
    end.

rng() ->
    case get(?PD_RNG) of
        undefined -> rand:mwc59_seed();
        X -> X
    end.
