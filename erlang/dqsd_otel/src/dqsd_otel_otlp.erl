%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc OTLP/HTTP JSON encoding of spans and start events, the latter in
%% either form of docs/contract/start-event.json: one `deltaq.span.starts'
%% record per probe (`starts/4', the batch form) or one `deltaq.span.start'
%% record per span (`logs/3').
%%
%% Written by hand because OTP 25 has no JSON module. It follows the OTLP
%% JSON mapping of opentelemetry-proto (protojson): lowerCamelCase keys,
%% trace and span ids as lowercase hex strings, 64-bit integers (timestamps,
%% `intValue') as decimal strings and enums as integers. Strings are always
%% valid UTF-8: bytes that are not are replaced by U+FFFD, since one invalid
%% string would make the collector reject the whole request.
%%
%% Every function here is total: any Erlang term a caller passed as a name,
%% an attribute or a failure reason is encoded somehow (in printed form if
%% nothing else fits), so a bad value never costs the batch it is in.
-module(dqsd_otel_otlp).

-include("dqsd_otel_internal.hrl").

-export([traces/3, logs/3, starts/4, record_count/1, resource/2, attributes/1, any_value/1,
         string/1, hex/1, probe/1]).

-export_type([resource/0, span_item/0, event_item/0, status/0]).

-type resource() :: {Resource :: iodata(), Scope :: iodata()}.
%% The pre-encoded `resource' and `scope' objects of every request.

-type status() :: ok | {error, Reason :: term()}
                | {exception, Class :: error | exit | throw, Reason :: term(),
                   Stack :: list()}.
-type span_item() :: {#dqsd_span{}, End :: integer(), status()}.
%% A finished span; `End' is erlang:monotonic_time(nanosecond).
-type event_item() :: {TraceId :: binary(), SpanId :: binary(),
                       Name :: term(), Start :: integer(), TraceState :: binary()}.
%% A start event; `Start' is erlang:monotonic_time(nanosecond), `Name' the
%% probe, the span's name (as probe/1 gives it: dqsd_otel queues no start
%% event for a name that names no probe).

-define(INT64_MIN, -16#8000000000000000).
-define(INT64_MAX, 16#7fffffffffffffff).
%% Longest status message or printed term, in bytes.
-define(MAX_TEXT, 4096).

%% The two lowercase hex digits of each byte value.
-define(HEX_BYTES, {
    <<"00">>, <<"01">>, <<"02">>, <<"03">>, <<"04">>, <<"05">>, <<"06">>, <<"07">>,
    <<"08">>, <<"09">>, <<"0a">>, <<"0b">>, <<"0c">>, <<"0d">>, <<"0e">>, <<"0f">>,
    <<"10">>, <<"11">>, <<"12">>, <<"13">>, <<"14">>, <<"15">>, <<"16">>, <<"17">>,
    <<"18">>, <<"19">>, <<"1a">>, <<"1b">>, <<"1c">>, <<"1d">>, <<"1e">>, <<"1f">>,
    <<"20">>, <<"21">>, <<"22">>, <<"23">>, <<"24">>, <<"25">>, <<"26">>, <<"27">>,
    <<"28">>, <<"29">>, <<"2a">>, <<"2b">>, <<"2c">>, <<"2d">>, <<"2e">>, <<"2f">>,
    <<"30">>, <<"31">>, <<"32">>, <<"33">>, <<"34">>, <<"35">>, <<"36">>, <<"37">>,
    <<"38">>, <<"39">>, <<"3a">>, <<"3b">>, <<"3c">>, <<"3d">>, <<"3e">>, <<"3f">>,
    <<"40">>, <<"41">>, <<"42">>, <<"43">>, <<"44">>, <<"45">>, <<"46">>, <<"47">>,
    <<"48">>, <<"49">>, <<"4a">>, <<"4b">>, <<"4c">>, <<"4d">>, <<"4e">>, <<"4f">>,
    <<"50">>, <<"51">>, <<"52">>, <<"53">>, <<"54">>, <<"55">>, <<"56">>, <<"57">>,
    <<"58">>, <<"59">>, <<"5a">>, <<"5b">>, <<"5c">>, <<"5d">>, <<"5e">>, <<"5f">>,
    <<"60">>, <<"61">>, <<"62">>, <<"63">>, <<"64">>, <<"65">>, <<"66">>, <<"67">>,
    <<"68">>, <<"69">>, <<"6a">>, <<"6b">>, <<"6c">>, <<"6d">>, <<"6e">>, <<"6f">>,
    <<"70">>, <<"71">>, <<"72">>, <<"73">>, <<"74">>, <<"75">>, <<"76">>, <<"77">>,
    <<"78">>, <<"79">>, <<"7a">>, <<"7b">>, <<"7c">>, <<"7d">>, <<"7e">>, <<"7f">>,
    <<"80">>, <<"81">>, <<"82">>, <<"83">>, <<"84">>, <<"85">>, <<"86">>, <<"87">>,
    <<"88">>, <<"89">>, <<"8a">>, <<"8b">>, <<"8c">>, <<"8d">>, <<"8e">>, <<"8f">>,
    <<"90">>, <<"91">>, <<"92">>, <<"93">>, <<"94">>, <<"95">>, <<"96">>, <<"97">>,
    <<"98">>, <<"99">>, <<"9a">>, <<"9b">>, <<"9c">>, <<"9d">>, <<"9e">>, <<"9f">>,
    <<"a0">>, <<"a1">>, <<"a2">>, <<"a3">>, <<"a4">>, <<"a5">>, <<"a6">>, <<"a7">>,
    <<"a8">>, <<"a9">>, <<"aa">>, <<"ab">>, <<"ac">>, <<"ad">>, <<"ae">>, <<"af">>,
    <<"b0">>, <<"b1">>, <<"b2">>, <<"b3">>, <<"b4">>, <<"b5">>, <<"b6">>, <<"b7">>,
    <<"b8">>, <<"b9">>, <<"ba">>, <<"bb">>, <<"bc">>, <<"bd">>, <<"be">>, <<"bf">>,
    <<"c0">>, <<"c1">>, <<"c2">>, <<"c3">>, <<"c4">>, <<"c5">>, <<"c6">>, <<"c7">>,
    <<"c8">>, <<"c9">>, <<"ca">>, <<"cb">>, <<"cc">>, <<"cd">>, <<"ce">>, <<"cf">>,
    <<"d0">>, <<"d1">>, <<"d2">>, <<"d3">>, <<"d4">>, <<"d5">>, <<"d6">>, <<"d7">>,
    <<"d8">>, <<"d9">>, <<"da">>, <<"db">>, <<"dc">>, <<"dd">>, <<"de">>, <<"df">>,
    <<"e0">>, <<"e1">>, <<"e2">>, <<"e3">>, <<"e4">>, <<"e5">>, <<"e6">>, <<"e7">>,
    <<"e8">>, <<"e9">>, <<"ea">>, <<"eb">>, <<"ec">>, <<"ed">>, <<"ee">>, <<"ef">>,
    <<"f0">>, <<"f1">>, <<"f2">>, <<"f3">>, <<"f4">>, <<"f5">>, <<"f6">>, <<"f7">>,
    <<"f8">>, <<"f9">>, <<"fa">>, <<"fb">>, <<"fc">>, <<"fd">>, <<"fe">>, <<"ff">>}).

%% @doc An ExportTraceServiceRequest holding `Spans'. `Offset' converts the
%% monotonic stamps to Unix time: erlang:time_offset(nanosecond).
-spec traces(resource(), [span_item()], integer()) -> iodata().
traces({Resource, Scope}, Spans, Offset) ->
    [<<"{\"resourceSpans\":[{\"resource\":">>, Resource,
     <<",\"scopeSpans\":[{\"scope\":">>, Scope, <<",\"spans\":[">>,
     join([span(S, Offset) || S <- Spans]),
     <<"]}]}]}">>].

%% @doc An ExportLogsServiceRequest holding one `deltaq.span.start' event per
%% element of `Events': the span's trace and span ids, the start time as its
%% timestamp, the span name as the `deltaq.probe' and `deltaq.span.name'
%% attributes and the span's tracestate, when it has one, as
%% `deltaq.tracestate'. Severity INFO, as the batch form's.
-spec logs(resource(), [event_item()], integer()) -> iodata().
logs(Resource, Events, Offset) ->
    log_records(Resource, [start_event(E, Offset) || E <- Events]).

%% @doc An ExportLogsServiceRequest holding the start events of `Events' in
%% the batch form: one `deltaq.span.starts' record per probe, in the order
%% of the probes' first events, or more for a probe of more than 65,536
%% events. Its `deltaq.starts' holds the probe's events in their order, each
%% `<<TraceId:16/binary, SpanId:8/binary, StartUnixNano:64/little>>', and,
%% when some of them has a sampling threshold (`ot=th:...' in its
%% tracestate, `dqsd_otel_tracecontext:threshold/1'), `deltaq.starts.thresholds'
%% their thresholds, `<<Threshold:64/little>>' each, 0 for none. `Now' is
%% the records' timestamp, in Unix nanoseconds: the entries carry their own
%% start times, and the records have no trace or span ids. Severity INFO
%% (`severityNumber' 9, no `severityText', as sdk/deltaqstart sends them),
%% so that a pipeline filtering by severity keeps them.
-spec starts(resource(), [event_item()], integer(), integer()) -> iodata().
starts(Resource, Events, Offset, Now) ->
    Time = integer_to_binary(Now),
    log_records(Resource, [starts_record(Probe, Entries, Time)
                           || {Probe, Entries} <- by_probe(Events, Offset)]).

%% @doc The number of log records `starts/4' makes of `Events'.
-spec record_count([event_item()]) -> non_neg_integer().
record_count(Events) ->
    length(by_probe(Events, 0)).

%% @doc The resource (`service.name', the `telemetry.sdk.*' attributes, then
%% `Attributes'; `ServiceName' wins over a `service.name' among them) and the
%% instrumentation scope, encoded once when the exporter starts.
-spec resource(ServiceName :: binary(), dqsd_otel:attributes()) -> resource().
resource(ServiceName, Attributes) ->
    Version = case application:get_key(dqsd_otel, vsn) of
                  {ok, V} -> unicode:characters_to_binary(V);
                  undefined -> <<"unknown">>
              end,
    Fixed = [{<<"service.name">>, ServiceName},
             {<<"telemetry.sdk.name">>, <<"dqsd_otel">>},
             {<<"telemetry.sdk.language">>, <<"erlang">>},
             {<<"telemetry.sdk.version">>, Version}],
    FixedKeys = [K || {K, _} <- Fixed],
    Others = [{K, V} || {K, V} <- pairs(Attributes),
                        not lists:member(key(K), FixedKeys)],
    Resource = [<<"{\"attributes\":">>, attributes(Fixed ++ Others), $}],
    Scope = [<<"{\"name\":\"dqsd_otel\",\"version\":">>, string(Version), $}],
    {iolist_to_binary(Resource), iolist_to_binary(Scope)}.

%% @doc A JSON array of OTLP KeyValue objects. Elements of a list that are
%% not `{Key, Value}' pairs are skipped.
-spec attributes(dqsd_otel:attributes()) -> iodata().
attributes(Attributes) ->
    [$[, join([key_value(K, V) || {K, V} <- pairs(Attributes)]), $]].

%% @doc An OTLP AnyValue object for an Erlang term (see
%% `dqsd_otel:attribute_value()').
-spec any_value(term()) -> iodata().
any_value(V) when is_binary(V) ->
    [<<"{\"stringValue\":">>, string(V), $}];
any_value(true) ->
    <<"{\"boolValue\":true}">>;
any_value(false) ->
    <<"{\"boolValue\":false}">>;
any_value(V) when is_integer(V), V >= ?INT64_MIN, V =< ?INT64_MAX ->
    [<<"{\"intValue\":\"">>, integer_to_binary(V), <<"\"}">>];
any_value(V) when is_integer(V) ->
    %% Outside int64: keep every digit rather than wrap around.
    [<<"{\"stringValue\":\"">>, integer_to_binary(V), <<"\"}">>];
any_value(V) when is_float(V) ->
    %% Erlang has no NaN or infinities, so every float is a JSON number.
    [<<"{\"doubleValue\":">>, float_to_binary(V, [short]), $}];
any_value(V) when is_atom(V) ->
    [<<"{\"stringValue\":">>, string(V), $}];
any_value(V) when is_map(V) ->
    [<<"{\"kvlistValue\":{\"values\":">>, attributes(V), <<"}}">>];
any_value(V) when is_list(V) ->
    case is_proper(V) of
        false ->
            [<<"{\"stringValue\":">>, string(print(V)), $}];
        true ->
            case io_lib:printable_unicode_list(V) of
                true ->
                    [<<"{\"stringValue\":">>, string(V), $}];
                false ->
                    [<<"{\"arrayValue\":{\"values\":[">>,
                     join([any_value(E) || E <- V]), <<"]}}">>]
            end
    end;
any_value(V) ->
    [<<"{\"stringValue\":">>, string(print(V)), $}].

%% @doc A JSON string: binaries, atoms and character lists as text, other
%% terms in printed form. Invalid UTF-8 bytes become U+FFFD.
-spec string(term()) -> iodata().
string(V) ->
    [$", escape(text(V)), $"].

%% @doc Lowercase hex digits of a binary (trace and span ids).
-spec hex(binary()) -> binary().
hex(<<A, B, C, D, E, F, G, H>>) ->
    %% Span ids, unrolled: the exporter's hottest code.
    T = ?HEX_BYTES,
    <<(element(A + 1, T))/binary, (element(B + 1, T))/binary,
      (element(C + 1, T))/binary, (element(D + 1, T))/binary,
      (element(E + 1, T))/binary, (element(F + 1, T))/binary,
      (element(G + 1, T))/binary, (element(H + 1, T))/binary>>;
hex(<<High:8/binary, Low:8/binary>>) ->
    <<(hex(High))/binary, (hex(Low))/binary>>;
hex(Bin) ->
    hex(Bin, ?HEX_BYTES, <<>>).

hex(<<B, Rest/binary>>, Table, Acc) ->
    hex(Rest, Table, <<Acc/binary, (element(B + 1, Table))/binary>>);
hex(<<>>, _Table, Acc) ->
    Acc.

%% @doc The probe of a span named `Name': the name's text, as the span's
%% name and the start event's `deltaq.probe' are sent (a binary, an atom's
%% or a string's characters, the flattened bytes of other chardata, the
%% printed form of anything else), or `none' when the name names no probe,
%% and its span gets no start event: empty text, which no probe has (the
%% collector refuses a batch record whose `deltaq.probe' is empty whole,
%% docs/contract/start-event.json), or longer than 256 bytes as sent, each
%% byte that is not UTF-8 replaced by U+FFFD's three, which the collector
%% refuses as a probe name.
-spec probe(term()) -> binary() | none.
probe(Name) ->
    case text(Name) of
        <<>> -> none;
        Text -> case fits_probe(Text) of
                    true -> Text;
                    false -> none
                end
    end.

%% Whether a name's text is at most ?MAX_PROBE_BYTES bytes as sent. The
%% replacement of invalid bytes only adds bytes, at most two to each: a
%% name over the limit is too long whatever it holds, and one of at most a
%% third of it fits whatever it holds. Only those in between are scanned.
fits_probe(Text) when byte_size(Text) > ?MAX_PROBE_BYTES ->
    false;
fits_probe(Text) when byte_size(Text) * 3 =< ?MAX_PROBE_BYTES ->
    true;
fits_probe(Text) ->
    sent_size(Text, 0) =< ?MAX_PROBE_BYTES.

%% The size of a binary once escape/1 has replaced its invalid bytes
%% (the same rule: one U+FFFD, three bytes, per byte that is not UTF-8).
sent_size(<<_/utf8, Rest/binary>> = Bin, N) ->
    sent_size(Rest, N + byte_size(Bin) - byte_size(Rest));
sent_size(<<_, Rest/binary>>, N) ->
    sent_size(Rest, N + 3);
sent_size(<<>>, N) ->
    N.

%%--------------------------------------------------------------------

span({#dqsd_span{trace_id = TraceId, span_id = SpanId, parent_id = Parent,
                 name = Name, attributes = Attributes, start = Start,
                 trace_flags = Sampled, trace_state = TraceState,
                 parent_remote = ParentRemote},
      End, Status}, Offset) ->
    [<<"{\"traceId\":\"">>, hex(TraceId),
     <<"\",\"spanId\":\"">>, hex(SpanId), $",
     case TraceState of
         <<>> -> [];
         _ -> [<<",\"traceState\":">>, string(TraceState)]
     end,
     case Parent of
         undefined -> [];
         _ -> [<<",\"parentSpanId\":\"">>, hex(Parent), $"]
     end,
     <<",\"flags\":">>, integer_to_binary(span_flags(Sampled, ParentRemote)),
     <<",\"name\":">>, string(Name),
     <<",\"kind\":">>, integer_to_binary(?SPAN_KIND_INTERNAL),
     <<",\"startTimeUnixNano\":\"">>, integer_to_binary(Start + Offset),
     <<"\",\"endTimeUnixNano\":\"">>, integer_to_binary(End + Offset),
     <<"\",\"attributes\":">>, span_attributes(Attributes, Status),
     exception_events(Status, End + Offset),
     status(Status),
     $}].

%% OTLP span flags (trace.proto, SpanFlags): the W3C trace flags in bits
%% 0-7 (here only `sampled'), and whether the parent is remote in bit 9,
%% bit 8 saying that bit 9 is known.
span_flags(Sampled, ParentRemote) ->
    Sampled bor ?SPAN_FLAGS_HAS_IS_REMOTE
        bor case ParentRemote of
                true -> ?SPAN_FLAGS_IS_REMOTE;
                false -> 0
            end.

%% A failed span carries deltaq.failed = true (replacing any value the
%% caller gave it).
span_attributes(Attributes, ok) ->
    attributes(Attributes);
span_attributes(Attributes, _Failed) ->
    Kept = [{K, V} || {K, V} <- pairs(Attributes), key(K) =/= ?ATTR_FAILED],
    attributes(Kept ++ [{?ATTR_FAILED, true}]).

%% The OpenTelemetry semantic conventions' `exception' span event.
exception_events({exception, Class, Reason, Stack}, Time) ->
    Attributes =
        [{<<"exception.type">>, atom_to_binary(Class, utf8)},
         {<<"exception.message">>, print(Reason)},
         {<<"exception.stacktrace">>, format_exception(Class, Reason, Stack)}],
    [<<",\"events\":[{\"timeUnixNano\":\"">>, integer_to_binary(Time),
     <<"\",\"name\":\"exception\",\"attributes\":">>, attributes(Attributes),
     <<"}]">>];
exception_events(_, _) ->
    [].

status(ok) ->
    [];
status({error, undefined}) ->
    [<<",\"status\":{\"code\":">>, integer_to_binary(?STATUS_CODE_ERROR), $}];
status({error, Reason}) ->
    status_error(Reason);
status({exception, Class, Reason, _Stack}) ->
    status_error([atom_to_binary(Class, utf8), $:, print(Reason)]).

status_error(Message) ->
    [<<",\"status\":{\"message\":">>, string(Message),
     <<",\"code\":">>, integer_to_binary(?STATUS_CODE_ERROR), $}].

log_records({Resource, Scope}, Records) ->
    [<<"{\"resourceLogs\":[{\"resource\":">>, Resource,
     <<",\"scopeLogs\":[{\"scope\":">>, Scope, <<",\"logRecords\":[">>,
     join(Records),
     <<"]}]}]}">>].

start_event({TraceId, SpanId, Name, Start, TraceState}, Offset) ->
    Time = integer_to_binary(Start + Offset),
    %% The probe is the span's name: deltaq.span.name, which the
    %% collector's deltaq processor gives the synthetic span of a timeout,
    %% says so as sdk/deltaqstart's records do.
    NameValue = [<<"\",\"value\":{\"stringValue\":">>, string(Name), <<"}}">>],
    [<<"{\"timeUnixNano\":\"">>, Time,
     <<"\",\"observedTimeUnixNano\":\"">>, Time,
     <<"\",\"severityNumber\":">>, integer_to_binary(?SEVERITY_NUMBER_INFO),
     <<",\"eventName\":\"">>, ?START_EVENT_NAME,
     <<"\",\"traceId\":\"">>, hex(TraceId),
     <<"\",\"spanId\":\"">>, hex(SpanId),
     <<"\",\"attributes\":[{\"key\":\"">>, ?ATTR_PROBE, NameValue,
     <<",{\"key\":\"">>, ?ATTR_SPAN_NAME, NameValue,
     case TraceState of
         <<>> -> [];
         _ -> [<<",{\"key\":\"">>, ?ATTR_TRACESTATE,
               <<"\",\"value\":{\"stringValue\":">>, string(TraceState), <<"}}">>]
     end,
     <<"]}">>].

%% The events grouped by probe, the probes in the order of their first
%% events: `[{Probe, [{Entry, Threshold}]}]', each probe's entries in order
%% and at most ?MAX_STARTS of them (a probe with more comes more than once).
%% A probe is its name's text, so that <<"a">>, a and "a" are one.
by_probe(Events, Offset) ->
    {Order, Groups} =
        lists:foldl(
          fun({TraceId, SpanId, Name, Start, TraceState}, {Order0, Groups0}) ->
                  Probe = text(Name),
                  Entry = {<<TraceId:16/binary, SpanId:8/binary,
                             (Start + Offset):64/little-unsigned>>,
                           dqsd_otel_tracecontext:threshold(TraceState)},
                  case Groups0 of
                      #{Probe := Entries} ->
                          {Order0, Groups0#{Probe := [Entry | Entries]}};
                      #{} ->
                          {[Probe | Order0], Groups0#{Probe => [Entry]}}
                  end
          end, {[], #{}}, Events),
    [{Probe, Chunk} || Probe <- lists:reverse(Order),
                       Chunk <- chunks(lists:reverse(maps:get(Probe, Groups)))].

chunks(Entries) when length(Entries) > ?MAX_STARTS ->
    {Chunk, Rest} = lists:split(?MAX_STARTS, Entries),
    [Chunk | chunks(Rest)];
chunks(Entries) ->
    [Entries].

starts_record(Probe, Entries, Time) ->
    Thresholds = case lists:any(fun({_, Th}) -> Th =/= 0 end, Entries) of
                     true ->
                         [<<",{\"key\":\"">>, ?ATTR_STARTS_THRESHOLDS,
                          <<"\",\"value\":{\"bytesValue\":\"">>,
                          base64:encode(<< <<Th:64/little-unsigned>> || {_, Th} <- Entries >>),
                          <<"\"}}">>];
                     false ->
                         []
                 end,
    [<<"{\"timeUnixNano\":\"">>, Time,
     <<"\",\"observedTimeUnixNano\":\"">>, Time,
     <<"\",\"severityNumber\":">>, integer_to_binary(?SEVERITY_NUMBER_INFO),
     <<",\"eventName\":\"">>, ?STARTS_EVENT_NAME,
     <<"\",\"attributes\":[{\"key\":\"">>, ?ATTR_PROBE,
     <<"\",\"value\":{\"stringValue\":">>, string(Probe),
     <<"}},{\"key\":\"">>, ?ATTR_STARTS,
     <<"\",\"value\":{\"bytesValue\":\"">>,
     base64:encode(<< <<E/binary>> || {E, _} <- Entries >>), <<"\"}}">>,
     Thresholds,
     <<"]}">>].

key_value(K, V) ->
    [<<"{\"key\":">>, string(K), <<",\"value\":">>, any_value(V), $}].

pairs(Attributes) when is_map(Attributes) ->
    maps:to_list(Attributes);
pairs(Attributes) when is_list(Attributes) ->
    [P || {_, _} = P <- proper_prefix(Attributes)];
pairs(_) ->
    [].

%% An attribute key as the binary that goes on the wire.
key(K) ->
    text(K).

%% Text of a name, key or message, as a binary (possibly invalid UTF-8,
%% which escape/1 repairs).
text(V) when is_binary(V) ->
    V;
text(V) when is_atom(V) ->
    atom_to_binary(V, utf8);
text(V) when is_list(V) ->
    try unicode:characters_to_binary(V) of
        B when is_binary(B) -> B;
        %% A binary in it is not UTF-8 (or ends in the middle of a
        %% character): its bytes as they are, for escape/1 to repair as it
        %% repairs a binary name, so that [<<"caf", 16#e9>>] is sent as
        %% <<"caf", 16#e9>> is, "caf\ufffd", not in printed form.
        _ -> chardata_bytes(V)
    catch
        error:badarg -> print(V)
    end;
text(V) when is_integer(V) ->
    integer_to_binary(V);
text(V) ->
    print(V).

%% Chardata as bytes: its binaries as they are, its characters in UTF-8;
%% the printed form when it holds something else (a surrogate, say).
chardata_bytes(V) ->
    try iolist_to_binary(utf8_parts(V))
    catch
        error:badarg -> print(V)
    end.

utf8_parts(B) when is_binary(B) -> B;
utf8_parts(C) when is_integer(C) -> <<C/utf8>>;
utf8_parts([H | T]) when is_list(T); is_binary(T) -> [utf8_parts(H) | utf8_parts(T)];
utf8_parts([]) -> [];
utf8_parts(_) -> error(badarg).

print(V) ->
    Bin = unicode:characters_to_binary(io_lib:format("~0tP", [V, 30])),
    truncate(Bin).

format_exception(Class, Reason, Stack) ->
    try erl_error:format_exception(Class, Reason, Stack) of
        Chars -> truncate(unicode:characters_to_binary(Chars))
    catch
        _:_ -> print({Class, Reason, Stack})
    end.

truncate(<<Bin:?MAX_TEXT/binary, _/binary>>) -> Bin;
truncate(Bin) when is_binary(Bin) -> Bin;
truncate(_) -> <<>>.

is_proper([]) -> true;
is_proper([_ | T]) -> is_proper(T);
is_proper(_) -> false.

proper_prefix([H | T]) -> [H | proper_prefix(T)];
proper_prefix(_) -> [].

join([]) -> [];
join([H | T]) -> [H | [[$, | X] || X <- T]].

%% JSON string escaping over a binary, copying runs of safe bytes as
%% sub-binaries. escape(Rest, Original, RunStart, RunLength, Acc).
escape(Bin) ->
    escape(Bin, Bin, 0, 0, []).

escape(<<C, Rest/binary>>, Orig, Start, Len, Acc)
  when C >= 16#20, C < 16#80, C =/= $", C =/= $\\ ->
    escape(Rest, Orig, Start, Len + 1, Acc);
escape(<<C, Rest/binary>>, Orig, Start, Len, Acc) when C < 16#80 ->
    Acc1 = [Acc, binary_part(Orig, Start, Len) | escape_char(C)],
    escape(Rest, Orig, Start + Len + 1, 0, Acc1);
escape(<<_/utf8, Rest/binary>> = Bin, Orig, Start, Len, Acc) ->
    escape(Rest, Orig, Start, Len + byte_size(Bin) - byte_size(Rest), Acc);
escape(<<_, Rest/binary>>, Orig, Start, Len, Acc) ->
    %% Not UTF-8 (Erlang's utf8 segments reject overlong forms and
    %% surrogates, as JSON decoders do).
    Acc1 = [Acc, binary_part(Orig, Start, Len) | <<"\\ufffd">>],
    escape(Rest, Orig, Start + Len + 1, 0, Acc1);
escape(<<>>, Orig, 0, _Len, []) ->
    Orig;
escape(<<>>, Orig, Start, Len, Acc) ->
    [Acc | binary_part(Orig, Start, Len)].

escape_char($") -> <<"\\\"">>;
escape_char($\\) -> <<"\\\\">>;
escape_char($\n) -> <<"\\n">>;
escape_char($\r) -> <<"\\r">>;
escape_char($\t) -> <<"\\t">>;
escape_char($\b) -> <<"\\b">>;
escape_char($\f) -> <<"\\f">>;
escape_char(C) -> <<"\\u00", (hex_digit(C bsr 4)), (hex_digit(C band 15))>>.

hex_digit(D) when D < 10 -> $0 + D;
hex_digit(D) -> $a + D - 10.
