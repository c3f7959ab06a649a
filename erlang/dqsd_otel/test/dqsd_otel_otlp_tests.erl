%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% Tests of the OTLP/HTTP JSON encoder. Expected shapes follow the OTLP
%% JSON mapping (opentelemetry-proto, docs/specification.md "JSON Protobuf
%% Encoding"); the Go test internal/otlpjson checks the same output with the
%% collector's own decoder.
-module(dqsd_otel_otlp_tests).

-include("dqsd_otel_test.hrl").
-include("dqsd_otel_internal.hrl").

-define(TRACE, <<16#0a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16#ff>>).
-define(SPAN, <<16#de, 16#ad, 16#be, 16#ef, 0, 0, 0, 1>>).
-define(PARENT, <<1, 2, 3, 4, 5, 6, 7, 8>>).

decode(IoData) -> dqsd_otel_test_json:decode(IoData).

value(V) -> decode(dqsd_otel_otlp:any_value(V)).

str(V) -> decode(dqsd_otel_otlp:string(V)).

resource() -> dqsd_otel_otlp:resource(<<"svc">>, #{}).

span(Parent, Attributes) ->
    #dqsd_span{trace_id = ?TRACE, span_id = ?SPAN, parent_id = Parent,
               name = <<"worker_1">>, attributes = Attributes, start = 1000,
               recording = true}.

%% The only span of a traces request.
one_span(Item, Offset) ->
    #{<<"resourceSpans">> := [#{<<"scopeSpans">> := [#{<<"spans">> := [S]}]}]} =
        decode(dqsd_otel_otlp:traces(resource(), [Item], Offset)),
    S.

attrs(List) -> maps:from_list([{K, V} || #{<<"key">> := K, <<"value">> := V} <- List]).

hex_test() ->
    ?assertEqual(<<"0a0102030405060708090a0b0c0d0eff">>, dqsd_otel_otlp:hex(?TRACE)),
    ?assertEqual(<<"deadbeef00000001">>, dqsd_otel_otlp:hex(?SPAN)),
    ?assertEqual(<<"00ff10">>, dqsd_otel_otlp:hex(<<0, 255, 16>>)),
    ?assertEqual(<<>>, dqsd_otel_otlp:hex(<<>>)).

string_escaping_test_() ->
    [?_assertEqual(<<"plain">>, str(<<"plain">>)),
     ?_assertEqual(<<"q\"b\\s/">>, str(<<"q\"b\\s/">>)),
     ?_assertEqual(<<"\n\r\t\b\f", 0, 1, 31>>, str(<<"\n\r\t\b\f", 0, 1, 31>>)),
     ?_assertEqual(<<"ΔQ – 時間 😀"/utf8>>, str(<<"ΔQ – 時間 😀"/utf8>>)),
     ?_assertEqual(<<"atom">>, str(atom)),
     ?_assertEqual(<<"ΔQ"/utf8>>, str("ΔQ")),
     ?_assertEqual(<<"42">>, str(42)),
     ?_assertEqual(<<"{a,1}">>, str({a, 1}))].

%% Invalid UTF-8 would make the collector reject the whole request, so each
%% offending byte becomes U+FFFD (the WHATWG/Unicode "maximal subpart"
%% practice is per sequence; per byte is the simpler safe choice).
invalid_utf8_test_() ->
    R = <<16#FFFD/utf8>>,
    [?_assertEqual(<<"a", R/binary, "b">>, str(<<"a", 16#ff, "b">>)),
     %% A lone continuation byte, and a sequence cut short (two bytes).
     ?_assertEqual(<<R/binary, "x", R/binary, R/binary>>,
                   str(<<16#80, "x", 16#e2, 16#82>>)),
     %% An encoded surrogate (U+D800) is not UTF-8.
     ?_assertEqual(<<R/binary, R/binary, R/binary>>, str(<<16#ed, 16#a0, 16#80>>)),
     %% An overlong "/" (C0 AF) is not UTF-8.
     ?_assertEqual(<<R/binary, R/binary>>, str(<<16#c0, 16#af>>))].

any_value_test_() ->
    Max = 9223372036854775807,
    Min = -9223372036854775808,
    [?_assertEqual(#{<<"stringValue">> => <<"s">>}, value(<<"s">>)),
     ?_assertEqual(#{<<"stringValue">> => <<"chars">>}, value("chars")),
     ?_assertEqual(#{<<"stringValue">> => <<"ok">>}, value(ok)),
     ?_assertEqual(#{<<"boolValue">> => true}, value(true)),
     ?_assertEqual(#{<<"boolValue">> => false}, value(false)),
     %% 64-bit integers are decimal strings in OTLP JSON.
     ?_assertEqual(#{<<"intValue">> => <<"0">>}, value(0)),
     ?_assertEqual(#{<<"intValue">> => <<"-7">>}, value(-7)),
     ?_assertEqual(#{<<"intValue">> => <<"9223372036854775807">>}, value(Max)),
     ?_assertEqual(#{<<"intValue">> => <<"-9223372036854775808">>}, value(Min)),
     ?_assertEqual(#{<<"stringValue">> => <<"9223372036854775808">>}, value(Max + 1)),
     ?_assertEqual(#{<<"stringValue">> => <<"-9223372036854775809">>}, value(Min - 1)),
     ?_assertEqual(#{<<"doubleValue">> => 0.25}, value(0.25)),
     ?_assertEqual(#{<<"doubleValue">> => -1.5e300}, value(-1.5e300)),
     ?_assertEqual(#{<<"arrayValue">> => #{<<"values">> =>
                                              [#{<<"intValue">> => <<"1">>},
                                               #{<<"stringValue">> => <<"x">>}]}},
                   value([1, <<"x">>])),
     ?_assertEqual(#{<<"kvlistValue">> => #{<<"values">> =>
                                               [#{<<"key">> => <<"k">>,
                                                  <<"value">> => #{<<"boolValue">> => true}}]}},
                   value(#{k => true})),
     ?_assertEqual(#{<<"stringValue">> => <<"[a|b]">>}, value([a | b])),
     ?_assertEqual(#{<<"stringValue">> => <<"{1,2}">>}, value({1, 2}))].

attributes_test() ->
    %% A list of pairs; anything else in it is skipped.
    Decoded = decode(dqsd_otel_otlp:attributes([{<<"a">>, 1}, junk, {b, <<"x">>}])),
    ?assertEqual([#{<<"key">> => <<"a">>, <<"value">> => #{<<"intValue">> => <<"1">>}},
                  #{<<"key">> => <<"b">>, <<"value">> => #{<<"stringValue">> => <<"x">>}}],
                 Decoded),
    ?assertEqual([], decode(dqsd_otel_otlp:attributes(#{}))).

resource_test() ->
    {Resource, Scope} = dqsd_otel_otlp:resource(<<"checkout">>,
                                                #{<<"service.name">> => <<"ignored">>,
                                                  'deployment.environment' => <<"test">>}),
    #{<<"attributes">> := List} = decode(Resource),
    A = attrs(List),
    ?assertEqual(#{<<"stringValue">> => <<"checkout">>}, maps:get(<<"service.name">>, A)),
    ?assertEqual(#{<<"stringValue">> => <<"erlang">>}, maps:get(<<"telemetry.sdk.language">>, A)),
    ?assertEqual(#{<<"stringValue">> => <<"dqsd_otel">>}, maps:get(<<"telemetry.sdk.name">>, A)),
    ?assertEqual(#{<<"stringValue">> => <<"test">>}, maps:get(<<"deployment.environment">>, A)),
    ?assertEqual(length(List), maps:size(A)),  % service.name not repeated
    ?assertMatch(#{<<"name">> := <<"dqsd_otel">>, <<"version">> := _}, decode(Scope)).

root_span_test() ->
    S = one_span({span(undefined, #{<<"k">> => 3}), 5000, ok}, 1700000000000000000),
    ?assertEqual(#{<<"traceId">> => <<"0a0102030405060708090a0b0c0d0eff">>,
                   <<"spanId">> => <<"deadbeef00000001">>,
                   <<"name">> => <<"worker_1">>,
                   <<"kind">> => 1,
                   %% 0x100 (the parent's remoteness is known: it is not
                   %% remote) + 0x01 (sampled) = 257.
                   <<"flags">> => 257,
                   <<"startTimeUnixNano">> => <<"1700000000000001000">>,
                   <<"endTimeUnixNano">> => <<"1700000000000005000">>,
                   <<"attributes">> => [#{<<"key">> => <<"k">>,
                                          <<"value">> => #{<<"intValue">> => <<"3">>}}]},
                 S).

child_span_test() ->
    S = one_span({span(?PARENT, []), 2000, ok}, 0),
    ?assertEqual(<<"0102030405060708">>, maps:get(<<"parentSpanId">>, S)),
    ?assertEqual([], maps:get(<<"attributes">>, S)),
    ?assertNot(maps:is_key(<<"status">>, S)).

%% A child of a remote parent (W3C trace context): the tracestate as
%% received, and flags 0x100 + 0x200 (the parent is remote) + the sampled
%% flag as the trace came: 0x301 = 769 sampled, 0x300 = 768 not.
remote_parent_span_test() ->
    Span = (span(?PARENT, #{}))#dqsd_span{trace_state = <<"congo=t61rcWkgMzE">>,
                                          parent_remote = true},
    S = one_span({Span, 2000, ok}, 0),
    ?assertEqual(<<"congo=t61rcWkgMzE">>, maps:get(<<"traceState">>, S)),
    ?assertEqual(769, maps:get(<<"flags">>, S)),
    ?assertEqual(768, maps:get(<<"flags">>, one_span({Span#dqsd_span{trace_flags = 0}, 2000, ok}, 0))),
    %% No traceState key for an empty one.
    ?assertNot(maps:is_key(<<"traceState">>, one_span({span(?PARENT, #{}), 2000, ok}, 0))).

failed_span_test() ->
    %% The caller's own deltaq.failed is replaced, not repeated.
    S = one_span({span(undefined, [{<<"deltaq.failed">>, false}, {<<"q">>, 1}]),
                  2000, {error, <<"queue full">>}}, 0),
    ?assertEqual(#{<<"code">> => 2, <<"message">> => <<"queue full">>},
                 maps:get(<<"status">>, S)),
    A = maps:get(<<"attributes">>, S),
    ?assertEqual(#{<<"q">> => #{<<"intValue">> => <<"1">>},
                   <<"deltaq.failed">> => #{<<"boolValue">> => true}}, attrs(A)),
    ?assertEqual(2, length(A)).

failed_span_reasons_test_() ->
    Status = fun(Reason) ->
                     maps:get(<<"status">>, one_span({span(undefined, #{}), 2000,
                                                      {error, Reason}}, 0))
             end,
    [?_assertEqual(#{<<"code">> => 2}, Status(undefined)),
     ?_assertEqual(#{<<"code">> => 2, <<"message">> => <<"timeout">>}, Status(timeout)),
     ?_assertEqual(#{<<"code">> => 2, <<"message">> => <<"{badmatch,3}">>},
                   Status({badmatch, 3}))].

exception_span_test() ->
    Stack = try error(badarith) catch error:badarith:St -> St end,
    S = one_span({span(undefined, #{}), 2000, {exception, error, badarith, Stack}}, 10),
    ?assertEqual(#{<<"code">> => 2, <<"message">> => <<"error:badarith">>},
                 maps:get(<<"status">>, S)),
    ?assertEqual(#{<<"deltaq.failed">> => #{<<"boolValue">> => true}},
                 attrs(maps:get(<<"attributes">>, S))),
    [Event] = maps:get(<<"events">>, S),
    ?assertEqual(<<"exception">>, maps:get(<<"name">>, Event)),
    ?assertEqual(<<"2010">>, maps:get(<<"timeUnixNano">>, Event)),
    EA = attrs(maps:get(<<"attributes">>, Event)),
    ?assertEqual(#{<<"stringValue">> => <<"error">>}, maps:get(<<"exception.type">>, EA)),
    ?assertEqual(#{<<"stringValue">> => <<"badarith">>}, maps:get(<<"exception.message">>, EA)),
    #{<<"stringValue">> := Trace} = maps:get(<<"exception.stacktrace">>, EA),
    ?assertNotEqual(nomatch, binary:match(Trace, atom_to_binary(?MODULE, utf8))).

start_events_test() ->
    Json = dqsd_otel_otlp:logs(resource(), [{?TRACE, ?SPAN, <<"worker_1">>, 7, <<>>},
                                           {?TRACE, ?PARENT, "end_to_end", 9,
                                            <<"congo=x,ot=th:c">>}], 100),
    #{<<"resourceLogs">> := [#{<<"resource">> := #{<<"attributes">> := _},
                               <<"scopeLogs">> := [#{<<"scope">> := #{<<"name">> := <<"dqsd_otel">>},
                                                     <<"logRecords">> := [E1, E2]}]}]} = decode(Json),
    ?assertEqual(#{<<"timeUnixNano">> => <<"107">>,
                   <<"observedTimeUnixNano">> => <<"107">>,
                   <<"severityNumber">> => 9,
                   <<"eventName">> => <<"deltaq.span.start">>,
                   <<"traceId">> => <<"0a0102030405060708090a0b0c0d0eff">>,
                   <<"spanId">> => <<"deadbeef00000001">>,
                   <<"attributes">> => [#{<<"key">> => <<"deltaq.probe">>,
                                          <<"value">> => #{<<"stringValue">> => <<"worker_1">>}},
                                        #{<<"key">> => <<"deltaq.span.name">>,
                                          <<"value">> => #{<<"stringValue">> => <<"worker_1">>}}]},
                 E1),
    ?assertEqual(<<"0102030405060708">>, maps:get(<<"spanId">>, E2)),
    %% A span's tracestate goes with its start event, for its threshold.
    %% The span's name, its probe, is its deltaq.span.name, as
    %% sdk/deltaqstart's records per span carry it (the contract's
    %% span_name): the name the collector gives the span of a timeout.
    ?assertEqual([#{<<"key">> => <<"deltaq.probe">>,
                    <<"value">> => #{<<"stringValue">> => <<"end_to_end">>}},
                  #{<<"key">> => <<"deltaq.span.name">>,
                    <<"value">> => #{<<"stringValue">> => <<"end_to_end">>}},
                  #{<<"key">> => <<"deltaq.tracestate">>,
                    <<"value">> => #{<<"stringValue">> => <<"congo=x,ot=th:c">>}}],
                 maps:get(<<"attributes">>, E2)).

%% Both forms of start event have severity INFO: SeverityNumber 9 in
%% opentelemetry-proto's logs.proto, an integer in OTLP JSON (enums are
%% integers there), and no severity text, as sdk/deltaqstart sends them. A
%% log pipeline keeping the records from INFO up (opentelemetry-go-contrib's
%% minsev processor, by default) dropped every one when they had none.
start_event_severity_test() ->
    Events = [{?TRACE, ?SPAN, <<"worker_1">>, 7, <<>>},
              {?TRACE, ?PARENT, <<"worker_2">>, 9, <<"ot=th:c">>}],
    PerSpan = events_of(dqsd_otel_otlp:logs(resource(), Events, 0)),
    Batch = events_of(dqsd_otel_otlp:starts(resource(), Events, 0, 1)),
    ?assertEqual({2, 2}, {length(PerSpan), length(Batch)}),
    ?assertEqual([{9, none} || _ <- PerSpan ++ Batch],
                 [{maps:get(<<"severityNumber">>, R, none), maps:get(<<"severityText">>, R, none)}
                  || R <- PerSpan ++ Batch]).

%% The probe of a span name: its text as sent, `none' when empty or longer
%% than 256 bytes as sent (sdk/deltaqstart's maxProbeLength; invalid bytes
%% each become U+FFFD, three bytes, as string/1 sends them).
probe_test_() ->
    P256 = binary:copy(<<"p">>, 256),
    R = <<16#fffd/utf8>>,
    [?_assertEqual(<<"worker_1">>, dqsd_otel_otlp:probe(<<"worker_1">>)),
     ?_assertEqual(<<"worker_1">>, dqsd_otel_otlp:probe(worker_1)),
     ?_assertEqual(<<"ΔQ"/utf8>>, dqsd_otel_otlp:probe("ΔQ")),
     ?_assertEqual(<<"ab">>, dqsd_otel_otlp:probe([<<"a">>, "b"])),
     ?_assertEqual(P256, dqsd_otel_otlp:probe(P256)),
     ?_assertEqual(none, dqsd_otel_otlp:probe(<<P256/binary, "q">>)),
     ?_assertEqual(none, dqsd_otel_otlp:probe(<<>>)),
     ?_assertEqual(none, dqsd_otel_otlp:probe("")),
     ?_assertEqual(none, dqsd_otel_otlp:probe('')),
     ?_assertEqual(none, dqsd_otel_otlp:probe([<<>>])),
     ?_assertEqual(none, dqsd_otel_otlp:probe([[], <<>>, ""])),
     %% 85 invalid bytes are sent as 255 bytes, 86 as 258; 200 valid bytes
     %% and 18 invalid ones as 254, 19 as 257.
     ?_assertEqual(binary:copy(<<16#ff>>, 85), dqsd_otel_otlp:probe(binary:copy(<<16#ff>>, 85))),
     ?_assertEqual(none, dqsd_otel_otlp:probe(binary:copy(<<16#ff>>, 86))),
     ?_assertMatch(<<_:218/binary>>,
                   dqsd_otel_otlp:probe(<<(binary:copy(<<"x">>, 200))/binary,
                                          (binary:copy(<<16#80>>, 18))/binary>>)),
     ?_assertEqual(none, dqsd_otel_otlp:probe(<<(binary:copy(<<"x">>, 200))/binary,
                                                (binary:copy(<<16#80>>, 19))/binary>>)),
     %% The probe is what string/1 sends: the same bytes, repaired alike.
     ?_assertEqual(<<"a", R/binary, "b">>,
                   str(dqsd_otel_otlp:probe(<<"a", 16#ff, "b">>)))].

%% The batch records of a logs request, decoded: [{Record, Probe, Entries,
%% Thresholds}], Entries [{TraceId, SpanId, StartUnixNano}] and Thresholds
%% a list of integers or `none' when the record has no thresholds. Checks
%% the fields every batch record has: its event name, its timestamps (Now),
%% no ids of its own, and exactly its attributes.
batch_records(Json, Now) ->
    #{<<"resourceLogs">> := [#{<<"scopeLogs">> := [#{<<"scope">> := #{<<"name">> := <<"dqsd_otel">>},
                                                     <<"logRecords">> := Records}]}]} =
        decode(Json),
    [begin
         Time = integer_to_binary(Now),
         ?assertMatch(#{<<"eventName">> := <<"deltaq.span.starts">>,
                        <<"timeUnixNano">> := Time, <<"observedTimeUnixNano">> := Time,
                        <<"severityNumber">> := 9}, R),
         ?assertEqual([], [K || K <- [<<"traceId">>, <<"spanId">>], maps:is_key(K, R)]),
         A = attrs(maps:get(<<"attributes">>, R)),
         #{<<"deltaq.probe">> := #{<<"stringValue">> := Probe},
           <<"deltaq.starts">> := #{<<"bytesValue">> := Starts64}} = A,
         Starts = base64:decode(Starts64),
         ?assertEqual(0, byte_size(Starts) rem 32),
         Entries = [{T, S, Start} || <<T:16/binary, S:8/binary, Start:64/little-unsigned>> <= Starts],
         Thresholds =
             case A of
                 #{<<"deltaq.starts.thresholds">> := #{<<"bytesValue">> := Th64}} ->
                     ?assertEqual(3, maps:size(A)),
                     Th = base64:decode(Th64),
                     ?assertEqual(8 * length(Entries), byte_size(Th)),
                     [X || <<X:64/little-unsigned>> <= Th];
                 #{} ->
                     ?assertEqual(2, maps:size(A)),
                     none
             end,
         {R, Probe, Entries, Thresholds}
     end || R <- Records].

span_id(I) -> <<16#5a, 0, 0, 0, I:32>>.

%% The batch form: one record per probe, in the order of the probes' first
%% events, each with its probe's entries in order (the ids, the start in
%% Unix nanoseconds), the thresholds only on the record some of whose spans
%% have one (0 for the others), the export's time as timestamp. Probes are
%% names as text: <<"worker_1">>, worker_1 and "worker_1" are one.
starts_test() ->
    Events = [{?TRACE, span_id(1), <<"worker_1">>, 1, <<>>},
              {?TRACE, span_id(2), <<"worker_2">>, 2, <<"ot=th:8">>},
              {?TRACE, span_id(3), worker_1, 3, <<"ot=rv:ffffffffffffff">>},
              {?TRACE, span_id(4), <<"worker_2">>, 4, <<>>},
              {?TRACE, span_id(5), "worker_1", 5, <<>>},
              {?TRACE, span_id(6), <<"ΔQ \"3\""/utf8>>, 6,
               <<"congo=t61rcWkgMzE, ot=th:fff;rv:ffffffffffffff">>}],
    Json = dqsd_otel_otlp:starts(resource(), Events, 1000, 1764403200123456789),
    Entry = fun(I) -> {?TRACE, span_id(I), 1000 + I} end,
    ?assertMatch([{_, <<"worker_1">>, _, none},
                  {_, <<"worker_2">>, _, [16#80000000000000, 0]},
                  {_, <<"ΔQ \"3\""/utf8>>, _, [16#fff00000000000]}],
                 batch_records(Json, 1764403200123456789)),
    ?assertEqual([[Entry(1), Entry(3), Entry(5)], [Entry(2), Entry(4)], [Entry(6)]],
                 [E || {_, _, E, _} <- batch_records(Json, 1764403200123456789)]).

%% A probe of more than 65,536 events in one request gets more than one
%% record, of at most 65,536 entries, in order. It encodes and decodes
%% 131,075 events: about a second alone, beyond eunit's 5 s default on a
%% busy machine, so it has a minute.
starts_split_test_() ->
    {timeout, 60, fun() ->
        N = 2 * 65536 + 3,
        Events = [{?TRACE, span_id(I), <<"p">>, I, <<>>} || I <- lists:seq(1, N)],
        Records = batch_records(dqsd_otel_otlp:starts(resource(), Events, 0, 1), 1),
        ?assertEqual([65536, 65536, 3], [length(E) || {_, <<"p">>, E, none} <- Records]),
        ?assertEqual([{?TRACE, span_id(I), I} || I <- lists:seq(1, N)],
                     lists:append([E || {_, _, E, _} <- Records]))
    end}.

several_spans_test() ->
    #{<<"resourceSpans">> := [#{<<"scopeSpans">> := [#{<<"spans">> := Spans}]}]} =
        decode(dqsd_otel_otlp:traces(resource(), [{span(undefined, #{}), 2000, ok},
                                                  {span(?PARENT, #{}), 3000, ok},
                                                  {span(?PARENT, #{}), 4000, {error, x}}], 0)),
    ?assertEqual([<<"2000">>, <<"3000">>, <<"4000">>],
                 [maps:get(<<"endTimeUnixNano">>, S) || S <- Spans]).

%% The shared contract, docs/contract/start-event.json, found from this
%% test's source: the names and sizes this library writes are the ones the
%% collector's internal/contract and sdk/deltaqstart check against it.
start_event_contract_test() ->
    #{<<"event_name">> := EventName,
      <<"attributes">> := #{<<"probe">> := Probe, <<"span_name">> := SpanName,
                            <<"tracestate">> := TraceState},
      <<"batch">> := #{<<"event_name">> := BatchName,
                       <<"attributes">> := #{<<"probe">> := BatchProbe,
                                             <<"starts">> := Starts,
                                             <<"thresholds">> := Thresholds},
                       <<"entry">> := Entry,
                       <<"entry_bytes">> := EntryBytes,
                       <<"threshold_bytes">> := ThresholdBytes,
                       <<"threshold_encoding">> := ThresholdEncoding,
                       <<"max_entries">> := MaxEntries}} = start_event_contract(),
    ?assertEqual({?START_EVENT_NAME, ?ATTR_PROBE, ?ATTR_SPAN_NAME, ?ATTR_TRACESTATE},
                 {EventName, Probe, SpanName, TraceState}),
    ?assertEqual({?STARTS_EVENT_NAME, ?ATTR_PROBE, ?ATTR_STARTS, ?ATTR_STARTS_THRESHOLDS},
                 {BatchName, BatchProbe, Starts, Thresholds}),
    %% The layout dqsd_otel_otlp:starts/4 writes.
    ?assertEqual([{<<"trace_id">>, 16, none}, {<<"span_id">>, 8, none},
                  {<<"start_time_unix_nano">>, 8, <<"uint64 little-endian">>}],
                 [{F, B, maps:get(<<"encoding">>, E, none)}
                  || #{<<"field">> := F, <<"bytes">> := B} = E <- Entry]),
    ?assertEqual({32, 8, ?MAX_STARTS}, {EntryBytes, ThresholdBytes, MaxEntries}),
    ?assertMatch(<<"uint64 little-endian", _/binary>>, ThresholdEncoding).

%% docs/contract/start-event.json, decoded, found from this test's source.
start_event_contract() ->
    Source = proplists:get_value(source, ?MODULE:module_info(compile)),
    Path = filename:join([filename:dirname(Source), "..", "..", "..", "docs", "contract",
                          "start-event.json"]),
    {ok, Bin} = file:read_file(Path),
    decode(Bin).

%% The contract's probe_repair examples, which sdk/deltaqstart's tests take
%% too: each byte that is not UTF-8 is sent as U+FFFD, and a name is
%% announced when so sent it is 1 to 256 bytes; the record's `deltaq.probe'
%% is the name so sent. The same names give the same probes and the same
%% spans announced by either library.
probe_repair_contract_test() ->
    #{<<"probe_repair">> := #{<<"examples">> := Examples}} = start_event_contract(),
    ?assertNotEqual([], Examples),
    lists:foreach(
      fun({I, #{<<"name">> := Parts, <<"sent_bytes">> := SentBytes,
                <<"announced">> := Announced} = Ex}) ->
              Name = iolist_to_binary([binary:copy(binary:decode_hex(H), N)
                                       || #{<<"hex">> := H, <<"times">> := N} <- Parts]),
              Sent = str(Name),
              ?assertEqual({I, SentBytes}, {I, byte_size(Sent)}),
              case Ex of
                  #{<<"sent_hex">> := SentHex} ->
                      ?assertEqual({I, SentHex}, {I, dqsd_otel_otlp:hex(Sent)});
                  _ -> ok
              end,
              case dqsd_otel_otlp:probe(Name) of
                  none ->
                      ?assertEqual({I, false}, {I, Announced});
                  Probe ->
                      ?assertEqual({I, true}, {I, Announced}),
                      [R] = events_of(dqsd_otel_otlp:starts(
                                        resource(), [{?TRACE, ?SPAN, Probe, 1000, <<>>}], 0, 1)),
                      ?assertEqual({I, #{<<"stringValue">> => Sent}},
                                   {I, maps:get(<<"deltaq.probe">>,
                                                attrs(maps:get(<<"attributes">>, R)))})
              end
      end, lists:zip(lists:seq(0, length(Examples) - 1), Examples)).

%% A name given as iodata is the name its bytes make: each of the
%% contract's probe_repair examples, as a list of its parts (a binary
%% each, one byte each, nested), is sent, repaired and announced as the
%% binary is (docs/contract/start-event.json: "each byte of a probe or span
%% name that is not part of a valid UTF-8 sequence" becomes U+FFFD; the
%% README's "the flattened bytes of other chardata"). Such a name was sent
%% in printed form, `[<<"bad",255>>]', when a binary in it was not UTF-8.
probe_repair_iodata_test() ->
    #{<<"probe_repair">> := #{<<"examples">> := Examples}} = start_event_contract(),
    lists:foreach(
      fun({I, #{<<"name">> := Parts}}) ->
              Binaries = [binary:copy(binary:decode_hex(H), N)
                          || #{<<"hex">> := H, <<"times">> := N} <- Parts],
              Name = iolist_to_binary(Binaries),
              Bytes = [<<B>> || <<B>> <= Name],
              lists:foreach(
                fun(IoName) ->
                        ?assertEqual({I, str(Name)}, {I, str(IoName)}),
                        ?assertEqual({I, dqsd_otel_otlp:probe(Name)},
                                     {I, dqsd_otel_otlp:probe(IoName)})
                end, [Binaries, Bytes, [[], [Bytes]]])
      end, lists:zip(lists:seq(0, length(Examples) - 1), Examples)),
    R = <<16#fffd/utf8>>,
    ?assertEqual(<<"caf", R/binary>>, str(["caf", <<16#e9>>])).

%% The contract's example batch record (batch.example): its spans, encoded
%% by starts/4, give exactly its bytes of `deltaq.starts' and
%% `deltaq.starts.thresholds', the known answer that the collector's
%% internal/contract decodes and sdk/deltaqstart encodes too.
start_event_example_test() ->
    #{<<"batch">> := #{<<"example">> := #{<<"probe">> := Probe, <<"entries">> := Entries,
                                          <<"starts_hex">> := StartsHex,
                                          <<"thresholds_hex">> := ThresholdsHex}}} =
        start_event_contract(),
    ?assertNotEqual([], Entries),
    Events = [{binary:decode_hex(T), binary:decode_hex(S), Probe, binary_to_integer(Start), TS}
              || #{<<"trace_id">> := T, <<"span_id">> := S, <<"start_time_unix_nano">> := Start,
                   <<"tracestate">> := TS} <- Entries],
    %% Offset 0: the starts are Unix times already.
    [R] = events_of(dqsd_otel_otlp:starts(resource(), Events, 0, 1)),
    A = attrs(maps:get(<<"attributes">>, R)),
    ?assertEqual(#{<<"stringValue">> => Probe}, maps:get(<<"deltaq.probe">>, A)),
    #{<<"deltaq.starts">> := #{<<"bytesValue">> := Starts},
      <<"deltaq.starts.thresholds">> := #{<<"bytesValue">> := Thresholds}} = A,
    ?assertEqual(StartsHex, dqsd_otel_otlp:hex(base64:decode(Starts))),
    ?assertEqual(ThresholdsHex, dqsd_otel_otlp:hex(base64:decode(Thresholds))).

%% The log records of a logs request.
events_of(Json) ->
    #{<<"resourceLogs">> := [#{<<"scopeLogs">> := [#{<<"logRecords">> := Records}]}]} =
        decode(Json),
    Records.
