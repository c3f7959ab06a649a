%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% Tests of the W3C Trace Context headers. The valid values are the
%% examples of the W3C Recommendation "Trace Context": section "Examples of
%% HTTP traceparent Headers" (sampled and not sampled), and section
%% "Relationship Between the Headers" (the Congo and Rojo systems). The
%% invalid ones break, one at a time, a rule of section "traceparent Header
%% Field Values" or "Versioning of traceparent".
-module(dqsd_otel_tracecontext_tests).

-include("dqsd_otel_test.hrl").

-define(TC, dqsd_otel_tracecontext).

%% "Valid traceparent when caller sampled this request" and "... didn't
%% sample this request".
-define(SAMPLED, <<"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01">>).
-define(NOT_SAMPLED, <<"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00">>).
-define(TRACE_ID, <<16#4bf92f3577b34da6a3ce929d0e0e4736:128>>).
-define(PARENT_ID, <<16#00f067aa0ba902b7:64>>).

parse(Value) -> ?TC:parse_traceparent(Value).

%% A traceparent of the sampled example with its field at Pos (0-based)
%% replaced by New.
with_field(Pos, New) ->
    Fields = binary:split(?SAMPLED, <<"-">>, [global]),
    iolist_to_binary(lists:join($-, setelement_list(Pos, Fields, New))).

setelement_list(Pos, List, New) ->
    {Before, [_ | After]} = lists:split(Pos, List),
    Before ++ [New | After].

%%--------------------------------------------------------------------
%% traceparent

published_examples_test_() ->
    [?_assertEqual({ok, ?TRACE_ID, ?PARENT_ID, 1}, parse(?SAMPLED)),
     ?_assertEqual({ok, ?TRACE_ID, ?PARENT_ID, 0}, parse(?NOT_SAMPLED)),
     %% The Congo client's header (section "Relationship Between the
     %% Headers").
     ?_assertEqual({ok, <<16#0af7651916cd43dd8448eb211c80319c:128>>,
                    <<16#b7ad6b7169203331:64>>, 1},
                   parse(<<"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01">>)),
     %% Formatting gives the examples back.
     ?_assertEqual(?SAMPLED, ?TC:traceparent(?TRACE_ID, ?PARENT_ID, 1)),
     ?_assertEqual(?NOT_SAMPLED, ?TC:traceparent(?TRACE_ID, ?PARENT_ID, 0))].

%% Section "trace-flags": flags are a bit field, so 09 is sampled (00000001
%% with 00001000) and 08 is not; only `sampled' is kept, since "Other Flags"
%% MUST be sent as zero.
flags_test_() ->
    [?_assertEqual({ok, ?TRACE_ID, ?PARENT_ID, 1}, parse(with_field(3, <<"09">>))),
     ?_assertEqual({ok, ?TRACE_ID, ?PARENT_ID, 0}, parse(with_field(3, <<"08">>))),
     ?_assertEqual({ok, ?TRACE_ID, ?PARENT_ID, 1}, parse(with_field(3, <<"ff">>))),
     ?_assertEqual(?SAMPLED, ?TC:traceparent(?TRACE_ID, ?PARENT_ID, 1))].

invalid_traceparent_test_() ->
    Zero32 = binary:copy(<<"0">>, 32),
    Zero16 = binary:copy(<<"0">>, 16),
    Invalid =
        [%% Version ff is forbidden.
         with_field(0, <<"ff">>),
         %% All-zero trace-id or parent-id.
         with_field(1, Zero32),
         with_field(2, Zero16),
         %% Uppercase hex (HEXDIGLC) in each field.
         with_field(0, <<"0A">>),
         with_field(1, <<"4BF92F3577B34DA6A3CE929D0E0E4736">>),
         with_field(2, <<"00F067AA0BA902B7">>),
         with_field(3, <<"0A">>),
         %% Not hex at all.
         with_field(1, <<"4bf92f3577b34da6a3ce929d0e0e473g">>),
         with_field(2, <<"00f067aa0ba902bz">>),
         with_field(3, <<"0x">>),
         with_field(0, <<"-1">>),
         %% Wrong lengths of each field.
         with_field(0, <<"0">>),
         with_field(0, <<"000">>),
         with_field(1, <<"4bf92f3577b34da6a3ce929d0e0e473">>),
         with_field(1, <<"4bf92f3577b34da6a3ce929d0e0e47366">>),
         with_field(2, <<"00f067aa0ba902b">>),
         with_field(2, <<"00f067aa0ba902b77">>),
         with_field(3, <<"1">>),
         with_field(3, <<"011">>),
         %% Version 00 is exactly its four fields.
         <<?SAMPLED/binary, "-what-the-future-will-be-like">>,
         <<?SAMPLED/binary, "-">>,
         <<?SAMPLED/binary, ".x">>,
         %% Other delimiters, missing fields, nothing.
         binary:replace(?SAMPLED, <<"-">>, <<"_">>, [global]),
         <<"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7">>,
         <<"00-4bf92f3577b34da6a3ce929d0e0e4736">>,
         <<"00">>,
         <<"00-">>,
         <<>>,
         %% Whitespace inside the value (only around it is optional).
         <<"00- 4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01">>],
    [{binary_to_list(V), ?_assertEqual(error, parse(V))} || V <- Invalid].

%% Section "Versioning of traceparent": a higher version is parsed as its
%% first four fields when the flags are followed by the end or a dash, and
%% not at all when the value is shorter than 55 characters.
future_version_test_() ->
    Ok = {ok, ?TRACE_ID, ?PARENT_ID, 1},
    Cc = with_field(0, <<"cc">>),
    [?_assertEqual(Ok, parse(Cc)),
     ?_assertEqual(Ok, parse(<<Cc/binary, "-what-the-future-will-be-like">>)),
     ?_assertEqual(Ok, parse(<<Cc/binary, "-">>)),
     ?_assertEqual(error, parse(<<Cc/binary, ".what-the-future-will-be-like">>)),
     ?_assertEqual(error, parse(<<Cc/binary, "1">>)),
     ?_assertEqual(error, parse(binary:part(Cc, 0, 54))),
     ?_assertEqual(error, parse(<<"cc-", (binary:copy(<<"0">>, 32))/binary,
                                  "-00f067aa0ba902b7-01-extra">>)),
     ?_assertEqual(error, parse(<<"cc-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01">>))].

%% Optional whitespace around a field value is not part of it (RFC 7230,
%% section 3.2).
whitespace_test_() ->
    Ok = {ok, ?TRACE_ID, ?PARENT_ID, 1},
    [?_assertEqual(Ok, parse(<<" ", ?SAMPLED/binary>>)),
     ?_assertEqual(Ok, parse(<<?SAMPLED/binary, " \t">>))].

%%--------------------------------------------------------------------
%% Headers: lists and maps, names in any case, binaries and strings

extract_forms_test_() ->
    Ctx = {?TRACE_ID, ?PARENT_ID, 1, <<"congo=t61rcWkgMzE">>},
    S = binary_to_list(?SAMPLED),
    [%% inets httpd: lowercase string names and string values.
     ?_assertEqual(Ctx, ?TC:extract([{"host", "x"}, {"traceparent", S},
                                     {"tracestate", "congo=t61rcWkgMzE"}])),
     %% Names in any case, binaries.
     ?_assertEqual(Ctx, ?TC:extract([{<<"TraceParent">>, ?SAMPLED},
                                     {<<"TRACESTATE">>, <<"congo=t61rcWkgMzE">>}])),
     %% cowboy: a map of lowercase binaries.
     ?_assertEqual(Ctx, ?TC:extract(#{<<"traceparent">> => ?SAMPLED,
                                      <<"tracestate">> => <<"congo=t61rcWkgMzE">>})),
     ?_assertEqual(Ctx, ?TC:extract(#{"Traceparent" => S,
                                      "tracestate" => "congo=t61rcWkgMzE"})),
     %% Without tracestate.
     ?_assertEqual({?TRACE_ID, ?PARENT_ID, 1, <<>>}, ?TC:extract([{"traceparent", S}])),
     %% Elements that are no pairs are ignored.
     ?_assertEqual({?TRACE_ID, ?PARENT_ID, 1, <<>>},
                   ?TC:extract([junk, {"traceparent", S}, {a, b, c}]))].

no_context_test_() ->
    S = binary_to_list(?SAMPLED),
    [?_assertEqual(undefined, ?TC:extract([])),
     ?_assertEqual(undefined, ?TC:extract(#{})),
     ?_assertEqual(undefined, ?TC:extract([{"tracestate", "congo=t61rcWkgMzE"}])),
     ?_assertEqual(undefined, ?TC:extract([{"traceparent", "ff" ++ tl(tl(S))}])),
     %% Two traceparent fields, even equal ones or in different cases: no
     %% single parent.
     ?_assertEqual(undefined, ?TC:extract([{"traceparent", S}, {"traceparent", S}])),
     ?_assertEqual(undefined, ?TC:extract(#{<<"traceparent">> => ?SAMPLED,
                                            <<"Traceparent">> => ?SAMPLED})),
     %% What cowboy makes of two fields: one value joined by a comma.
     ?_assertEqual(undefined, ?TC:extract(#{<<"traceparent">> =>
                                                <<?SAMPLED/binary, ", ", ?SAMPLED/binary>>})),
     %% A value that is no string.
     ?_assertEqual(undefined, ?TC:extract([{"traceparent", [1 | 2]}])),
     ?_assertEqual(undefined, ?TC:extract([{"traceparent", [16#394]}])),
     ?_assertEqual(undefined, ?TC:extract(not_headers))].

%%--------------------------------------------------------------------
%% tracestate

%% Section "Relationship Between the Headers": the Rojo server carries on
%% Congo's entry, so the value is passed on as received.
tracestate_unchanged_test_() ->
    Rojo = <<"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE">>,
    [?_assertEqual(Rojo, ?TC:tracestate([Rojo])),
     %% Inner whitespace and empty members are kept as they came; the
     %% whitespace around the value is not part of it.
     ?_assertEqual(<<"rojo=1 ,, congo=2">>, ?TC:tracestate([<<" rojo=1 ,, congo=2\t">>])),
     ?_assertEqual(<<>>, ?TC:tracestate([])),
     ?_assertEqual(<<>>, ?TC:tracestate([<<" ">>]))].

%% Section "tracestate Header Field Values": several fields are combined
%% into one, in order, as RFC 7230 section 3.2.2 says.
tracestate_combined_test() ->
    ?assertEqual({?TRACE_ID, ?PARENT_ID, 0, <<"foo=1,bar=2,rojo=1,congo=2,baz=3">>},
                 ?TC:extract([{<<"traceparent">>, ?NOT_SAMPLED},
                              {<<"tracestate">>, <<"foo=1,bar=2">>},
                              {<<"tracestate">>, <<"rojo=1,congo=2">>},
                              {<<"tracestate">>, <<"baz=3">>}])).

%% A value that would not be a safe header value is not sent on.
tracestate_unsafe_test_() ->
    [?_assertEqual(<<>>, ?TC:tracestate([<<"a=1\r\nx-injected: 1">>])),
     ?_assertEqual(<<>>, ?TC:tracestate([<<"a=", 0, "1">>])),
     ?_assertEqual(<<>>, ?TC:tracestate([<<"a=ΔQ"/utf8>>])),
     ?_assertEqual(<<>>, ?TC:tracestate([<<"a=1">>, <<"b=\n">>]))].

%% Section "tracestate Limits": over 512 characters, whole members go,
%% those over 128 characters first, then from the end.
tracestate_limits_test_() ->
    %% k00=v…v .. k31=v…v: 32 members of 4 + 6 = 10 characters.
    Members = [iolist_to_binary(io_lib:format("k~2..0b=vvvvvv", [I])) || I <- lists:seq(0, 31)],
    Joined = fun(Ms) -> iolist_to_binary(lists:join($,, Ms)) end,
    %% Ten members of 60 characters (k0=, 57 × x): 10·60 + 9 = 609 > 512;
    %% eight are 8·60 + 7 = 487 ≤ 512, nine 548.
    Wide = [<<"k", ($0 + I), "=", (binary:copy(<<"x">>, 57))/binary>> || I <- lists:seq(0, 9)],
    %% A member of 200 characters among short ones, and members of 300 (a
    %% key of 43, a value of 256, the longest), each key its own.
    Long = <<"long=", (binary:copy(<<"y">>, 195))/binary>>,
    Fillers = [<<(binary:copy(<<"f">>, 42))/binary, ($0 + K), "=", (binary:copy(<<"z">>, 256))/binary>>
               || K <- lists:seq(1, 4)],
    Filler = hd(Fillers),
    Mixed = [<<"a=1">>, Long, <<"b=2">>, Filler, <<"c=3">>],
    %% The longest member: a key of 256 and a value of 256.
    Longest = <<(binary:copy(<<"k">>, 256))/binary, "=", (binary:copy(<<"v">>, 256))/binary>>,
    %% 258 + 1 + 253 = 512 characters.
    Max = <<"a=", (binary:copy(<<"v">>, 256))/binary, ",b=", (binary:copy(<<"w">>, 251))/binary>>,
    [?_assertEqual(300, byte_size(Filler)),
     ?_assertEqual(351, byte_size(Joined(Members))),
     ?_assertEqual(Joined(Members), ?TC:tracestate([Joined(Members)])),
     ?_assertEqual(609, byte_size(Joined(Wide))),
     ?_assertEqual(Joined(lists:sublist(Wide, 8)), ?TC:tracestate([Joined(Wide)])),
     %% 3 + 200 + 3 + 300 + 3 + 4 commas = 513 > 512: the last member over
     %% 128 characters goes first, leaving 3 + 200 + 3 + 3 + 3 commas = 212,
     %% and the short ones after it stay.
     ?_assertEqual(513, byte_size(Joined(Mixed))),
     ?_assertEqual(<<"a=1,", Long/binary, ",b=2,c=3">>, ?TC:tracestate([Joined(Mixed)])),
     %% 28 short members and 4 long ones (28·10 + 4·300 + 31 commas =
     %% 1511 characters): the long ones go from the end, all four.
     ?_assertEqual(Joined(lists:sublist(Members, 28)),
                   ?TC:tracestate([Joined(interleave(lists:sublist(Members, 28), 4, Fillers))])),
     %% Exactly 512 characters are kept as they are, 513 cut.
     ?_assertEqual(512, byte_size(Max)),
     ?_assertEqual(Max, ?TC:tracestate([Max])),
     ?_assertEqual(<<"a=", (binary:copy(<<"v">>, 256))/binary>>,
                   ?TC:tracestate([<<Max/binary, "w">>])),
     %% One member of 513 characters is over 128: nothing is left.
     ?_assertEqual(513, byte_size(Longest)),
     ?_assertEqual(<<>>, ?TC:tracestate([Longest]))].

%% Section "tracestate Header Field Values": a value that is no `list' of
%% valid members is dropped whole (section "A traceparent is Received",
%% step 3), the traceparent kept. The cases are those of the Trace Context
%% test suite (w3c/trace-context, test/test.py: test_tracestate_*), which
%% expects a validating vendor to discard them; the valid ones the
%% boundaries of the key and value rules ("Key", "Value").
tracestate_valid_test_() ->
    Join = fun(Ms) -> iolist_to_binary(lists:join($,, Ms)) end,
    Bars = [iolist_to_binary(io_lib:format("bar~2..0b=~2..0b", [I, I])) || I <- lists:seq(1, 33)],
    Z = fun(N) -> binary:copy(<<"z">>, N) end,
    Lc = list_to_binary(lists:seq($a, $z)),
    AllKey = <<Lc/binary, "0123456789_-*/">>,
    AllValue = list_to_binary([C || C <- lists:seq(16#20, 16#7e), C =/= $,, C =/= $=]),
    Invalid =
        [%% test_tracestate_key_illegal_characters
         [<<"foo =1">>], [<<"FOO=1">>], [<<"foo.bar=1">>],
         %% test_tracestate_key_illegal_vendor_format
         [<<"foo@=1,bar=2">>], [<<"@foo=1,bar=2">>], [<<"foo@@bar=1,bar=2">>],
         [<<"foo@bar@baz=1,bar=2">>],
         %% test_tracestate_value_illegal_characters
         [<<"foo=bar=baz">>], [<<"foo=,bar=3">>],
         %% test_tracestate_duplicated_keys
         [<<"foo=1,foo=1">>], [<<"foo=1,foo=2">>], [<<"foo=1">>, <<"foo=1">>],
         [<<"foo=1">>, <<"foo=2">>],
         %% test_tracestate_member_count_limit: 33 members
         [Join(lists:sublist(Bars, 10)), Join(lists:sublist(Bars, 11, 10)),
          Join(lists:sublist(Bars, 21, 10)), Join(lists:sublist(Bars, 31, 3))],
         %% test_tracestate_key_length_limit: a key of 257, a tenant of
         %% 242, a system of 15
         [<<"foo=1">>, <<(Z(257))/binary, "=1">>],
         [<<"foo=1">>, <<(binary:copy(<<"t">>, 242))/binary, "@v=1">>],
         [<<"foo=1">>, <<"t@", (binary:copy(<<"v">>, 15))/binary, "=1">>],
         %% A simple key starting with a digit or a dash, a system id
         %% starting with a digit, a value of 257, a tab or a byte beyond
         %% ASCII in a value, no `=' at all, an empty key.
         [<<"1foo=1">>], [<<"-foo=1">>], [<<"t@1v=1">>], [<<"a=", (Z(257))/binary>>],
         [<<"a=1\t2">>], [<<"a=\xe9">>], [<<"foo">>], [<<"=1">>]],
    Valid =
        [%% test_tracestate_member_count_limit: 32 members
         {[Join(lists:sublist(Bars, 10)), Join(lists:sublist(Bars, 11, 10)),
           Join(lists:sublist(Bars, 21, 10)), Join(lists:sublist(Bars, 31, 2))],
          Join(lists:sublist(Bars, 32))},
         %% test_tracestate_all_allowed_characters (cut: over 128, alone
         %% over 512 it would not be, so a short value)
         {[<<AllKey/binary, "=", AllValue/binary>>], <<AllKey/binary, "=", AllValue/binary>>},
         {[<<AllKey/binary, "@a-z0-9_-*/=1">>], <<AllKey/binary, "@a-z0-9_-*/=1">>},
         %% test_tracestate_key_length_limit: a key of 256, a tenant of 241
         %% and a system of 14 (each member over 128, so cut: the short
         %% one before it stays)
         {[<<"foo=1">>, <<(Z(256))/binary, "=1">>], <<"foo=1,", (Z(256))/binary, "=1">>},
         {[<<"foo=1">>, <<(binary:copy(<<"t">>, 241))/binary, "@", (binary:copy(<<"v">>, 14))/binary, "=1">>],
          <<"foo=1,", (binary:copy(<<"t">>, 241))/binary, "@", (binary:copy(<<"v">>, 14))/binary, "=1">>},
         %% A tenant id may start with a digit; a value with a leading
         %% space, of 256 characters; test_tracestate_ows_handling and
         %% test_tracestate_empty_header.
         {[<<"9@a=1">>], <<"9@a=1">>},
         {[<<"a= 1">>], <<"a= 1">>},
         {[<<"a=", (Z(256))/binary>>], <<"a=", (Z(256))/binary>>},
         {[<<"foo=1 \t , \t bar=2, \t baz=3">>], <<"foo=1 \t , \t bar=2, \t baz=3">>},
         {[<<"\t foo=1 \t">>], <<"foo=1">>},
         {[<<"foo=1">>, <<>>], <<"foo=1,">>},
         {[<<>>, <<"foo=1">>], <<",foo=1">>}],
    Parent = fun(States) -> ?TC:extract([{<<"traceparent">>, ?SAMPLED} |
                                         [{<<"tracestate">>, S} || S <- States]]) end,
    [{lists:flatten(io_lib:format("~0p", [V])), ?_assertEqual({?TRACE_ID, ?PARENT_ID, 1, <<>>}, Parent(V))}
     || V <- Invalid]
    ++ [{lists:flatten(io_lib:format("~0p", [V])), ?_assertEqual({?TRACE_ID, ?PARENT_ID, 1, Want}, Parent(V))}
        || {V, Want} <- Valid].

%% A tracestate of 20 MB took 2.6 s of the caller's CPU in extract. What is
%% read of it is bounded by the longest tracestate the Recommendation
%% allows without optional whitespace (32 members of 513 characters and
%% their commas, 16,447 characters, "tracestate Header Field Values"), so
%% extract takes about the time of a valid header, whatever the size; one
%% longer is dropped, unread.
huge_tracestate_test() ->
    Members = [iolist_to_binary(io_lib:format("k~b=v", [I])) || I <- lists:seq(0, 39)],
    Huge = iolist_to_binary([lists:join($,, Members), binary:copy(<<",k=v">>, 5000000)]),
    ?assert(byte_size(Huge) >= 20000000),
    Extract = fun(State) ->
                      {Micros, Ctx} = timer:tc(fun() ->
                          ?TC:extract([{<<"traceparent">>, ?SAMPLED},
                                       {<<"tracestate">>, State}])
                      end),
                      {?TRACE_ID, ?PARENT_ID, 1, TraceState} = Ctx,
                      {Micros, TraceState}
              end,
    {Micros, TraceState} = Extract(Huge),
    ?assertEqual(<<>>, TraceState),
    ?assert(Micros < 250000),
    %% The same as a string (httpd gives header values as strings), and
    %% as an iolist: walked only as far as the bound.
    HugeList = binary_to_list(binary:part(Huge, 0, 2000000)),
    ?assertMatch({_, <<>>}, Extract(HugeList)),
    ?assertMatch({_, <<>>}, Extract([HugeList, Huge])),
    %% A traceparent longer than 1024 bytes is invalid, read no further.
    ?assertEqual(undefined,
                 ?TC:extract([{<<"traceparent">>, <<?SAMPLED/binary, (binary:copy(<<" ">>, 20000000))/binary, "x">>}])).

%% A combined value of 16,447 characters is read, one of 16,448 is not,
%% whatever its fields: here a member padded with optional whitespace, in
%% one field or two (their comma counts).
tracestate_read_bound_test() ->
    Pad = fun(N) -> binary:copy(<<" ">>, N) end,
    ?assertEqual(<<"a=1">>, ?TC:tracestate([<<"a=1", (Pad(16444))/binary>>])),
    ?assertEqual(<<>>, ?TC:tracestate([<<"a=1", (Pad(16445))/binary>>])),
    ?assertEqual(<<"a=1,">>, ?TC:tracestate([<<"a=1">>, Pad(16443)])),
    ?assertEqual(<<>>, ?TC:tracestate([<<"a=1">>, Pad(16444)])).

%% Members with the next of Longs after every Every-th of them, while
%% Longs last.
interleave([M | Rest], Every, Longs) ->
    interleave([M | Rest], Every, Longs, 1).

interleave([M | Rest], Every, [L | Longs], I) when I rem Every =:= 0 ->
    [M, L | interleave(Rest, Every, Longs, I + 1)];
interleave([M | Rest], Every, Longs, I) ->
    [M | interleave(Rest, Every, Longs, I + 1)];
interleave([], _Every, _Longs, _I) ->
    [].

%%--------------------------------------------------------------------
%% inject

inject_test_() ->
    Ctx = {?TRACE_ID, ?PARENT_ID, 1, <<"congo=t61rcWkgMzE">>},
    S = binary_to_list(?SAMPLED),
    [%% inets httpc: strings, appended after the other fields.
     ?_assertEqual([{"accept", "*/*"}, {"traceparent", S},
                    {"tracestate", "congo=t61rcWkgMzE"}],
                   ?TC:inject(Ctx, [{"accept", "*/*"}])),
     ?_assertEqual([{"traceparent", S}, {"tracestate", "congo=t61rcWkgMzE"}],
                   ?TC:inject(Ctx, [])),
     %% Binaries, replacing stale fields in any case.
     ?_assertEqual([{<<"accept">>, <<"*/*">>}, {<<"traceparent">>, ?SAMPLED},
                    {<<"tracestate">>, <<"congo=t61rcWkgMzE">>}],
                   ?TC:inject(Ctx, [{<<"accept">>, <<"*/*">>},
                                    {<<"TraceParent">>, <<"00-old">>},
                                    {<<"tracestate">>, <<"old=1">>}])),
     %% Maps: binaries, unless the names are strings.
     ?_assertEqual(#{<<"traceparent">> => ?SAMPLED,
                     <<"tracestate">> => <<"congo=t61rcWkgMzE">>},
                   ?TC:inject(Ctx, #{})),
     ?_assertEqual(#{<<"a">> => <<"1">>, <<"traceparent">> => ?SAMPLED,
                     <<"tracestate">> => <<"congo=t61rcWkgMzE">>},
                   ?TC:inject(Ctx, #{<<"a">> => <<"1">>, <<"Traceparent">> => <<"x">>})),
     ?_assertEqual(#{"traceparent" => S, "tracestate" => "congo=t61rcWkgMzE"},
                   ?TC:inject(Ctx, #{"traceparent" => "x"})),
     %% No tracestate field for an empty tracestate (which the section
     %% "tracestate Header Field Values" says SHOULD NOT be sent).
     ?_assertEqual([{"traceparent", binary_to_list(?NOT_SAMPLED)}],
                   ?TC:inject({?TRACE_ID, ?PARENT_ID, 0, <<>>}, [{"tracestate", "old=1"}])),
     %% What inject writes, extract reads back.
     ?_assertEqual(Ctx, ?TC:extract(?TC:inject(Ctx, []))),
     ?_assertEqual(Ctx, ?TC:extract(?TC:inject(Ctx, #{})))].

%% Headers that are neither a proper list nor a map have nowhere to take
%% the fields: badarg, rather than the if_clause of the body's `if' (or a
%% bad_generator for an improper list).
inject_not_headers_test_() ->
    Ctx = {?TRACE_ID, ?PARENT_ID, 1, <<>>},
    [?_test(?assertException(error, badarg, ?TC:inject(Ctx, NotHeaders)))
     || NotHeaders <- [undefined, <<"accept: */*">>, {"accept", "*/*"}, 42,
                       [{"accept", "*/*"} | {"x", "y"}]]].

%%--------------------------------------------------------------------
%% Headers are bytes: invalid UTF-8 and random binaries

%% The two values that made extract/1 raise badarg (string:trim/3 on
%% invalid UTF-8): a traceparent starting with byte 0xff, a tracestate
%% ending in 0xc3 (the first byte of a two-byte sequence, cut short).
invalid_utf8_test_() ->
    Ff = <<16#ff, ?SAMPLED/binary>>,
    C3 = <<"congo=t61rcWkgMzE", 16#c3>>,
    [?_assertEqual(undefined, ?TC:extract([{<<"traceparent">>, Ff}])),
     ?_assertEqual(undefined, ?TC:extract(#{"traceparent" => binary_to_list(Ff)})),
     ?_assertEqual(error, parse(<<?SAMPLED/binary, 16#c3>>)),
     %% The traceparent is valid: the context stands, the tracestate,
     %% unsafe to send on, is dropped.
     ?_assertEqual({?TRACE_ID, ?PARENT_ID, 1, <<>>},
                   ?TC:extract([{<<"traceparent">>, ?SAMPLED}, {<<"tracestate">>, C3}])),
     ?_assertEqual({?TRACE_ID, ?PARENT_ID, 1, <<>>},
                   ?TC:extract([{"traceparent", binary_to_list(?SAMPLED)}, {"tracestate", binary_to_list(C3)}])),
     %% Whitespace is still trimmed, byte by byte.
     ?_assertEqual({?TRACE_ID, ?PARENT_ID, 1, <<"a=1">>},
                   ?TC:extract([{<<"traceparent">>, <<" \t", ?SAMPLED/binary, "\t ">>},
                                {<<"tracestate">>, <<"\ta=1 ">>}])),
     %% A value that is no string at all (code points above 255, an atom).
     ?_assertEqual(undefined, ?TC:extract([{"traceparent", [16#4e00 | binary_to_list(?SAMPLED)]}])),
     ?_assertEqual(undefined, ?TC:extract([{<<"traceparent">>, sampled}]))].

%% A random byte, half the time one a parser would trip on: tab, space,
%% dash, digits and lowercase hex, CR, LF, 0xc3, 0xff, 0x80.
random_byte() ->
    case rand:uniform(2) of
        1 -> rand:uniform(256) - 1;
        2 -> lists:nth(rand:uniform(13), [$\t, $\s, $-, $0, $1, $9, $a, $f, $\r, $\n, 16#c3, 16#ff, 16#80])
    end.

random_binary(Max) ->
    << <<(random_byte())>> || _ <- lists:seq(1, rand:uniform(Max + 1) - 1) >>.

%% A random traceparent value: random bytes, or the sampled example with one
%% byte replaced, cut, or extended by random bytes.
random_traceparent() ->
    case rand:uniform(4) of
        1 -> random_binary(70);
        2 ->
            N = rand:uniform(byte_size(?SAMPLED)) - 1,
            <<Before:N/binary, _, After/binary>> = ?SAMPLED,
            <<Before/binary, (random_byte()), After/binary>>;
        3 -> binary:part(?SAMPLED, 0, rand:uniform(byte_size(?SAMPLED)) - 1);
        4 -> <<?SAMPLED/binary, (random_binary(8))/binary>>
    end.

%% A random header list: random names and the two of ours in any case, with
%% binary or string values, and now and then an element that is no pair.
random_headers() ->
    [case rand:uniform(6) of
         1 -> {<<"traceparent">>, random_traceparent()};
         2 -> {"TraceParent", binary_to_list(random_traceparent())};
         3 -> {<<"tracestate">>, random_binary(600)};
         4 -> {"tracestate", binary_to_list(random_binary(40))};
         5 -> {random_binary(12), random_binary(20)};
         6 -> random_binary(4)
     end || _ <- lists:seq(1, rand:uniform(4) - 1)].

%% What extract/1 may return: undefined, or ids of the right sizes, a flag,
%% and a tracestate that is safe to send on (tab and printable ASCII) and
%% within 512 bytes.
valid_extract(undefined) ->
    true;
valid_extract({<<_:128>>, <<_:64>>, Sampled, TraceState}) when Sampled =:= 0; Sampled =:= 1 ->
    byte_size(TraceState) =< 512 andalso
        lists:all(fun(C) -> C =:= $\t orelse (C >= 16#20 andalso C =< 16#7e) end, binary_to_list(TraceState));
valid_extract(_) ->
    false.

%% A property over 3,000 random header lists (seeded, so a failure
%% repeats): extract/1 never raises and returns undefined or a valid
%% context; inject/2 of that context into the same headers never raises,
%% and extract/1 reads the context back.
random_headers_property_test() ->
    rand:seed(exsss, {25, 4, 2026}),
    lists:foreach(
      fun(_) ->
              Headers = random_headers(),
              Ctx = try ?TC:extract(Headers)
                    catch C:R -> erlang:error({extract_raised, Headers, C, R})
                    end,
              valid_extract(Ctx) orelse erlang:error({invalid_extract, Headers, Ctx}),
              Back = case Ctx of
                         undefined -> undefined;
                         _ -> ?TC:extract(?TC:inject(Ctx, Headers))
                     end,
              Back =:= Ctx orelse erlang:error({not_read_back, Headers, Ctx, Back})
      end, lists:seq(1, 3000)).

%% inject/2 with a random tracestate never raises, never writes a CR or LF
%% into a field, and what it writes extract/1 reads back: the tracestate
%% as tracestate/1 keeps it.
random_inject_property_test() ->
    rand:seed(exsss, {25, 4, 2027}),
    lists:foreach(
      fun(_) ->
              TraceState = random_binary(700),
              Headers = [H || {_, _} = H <- random_headers()],
              Out = ?TC:inject({?TRACE_ID, ?PARENT_ID, 1, TraceState}, Headers),
              Written = [iolist_to_binary(V) || {N, V} <- Out,
                                                lower_bytes(iolist_to_binary(N)) =:= <<"tracestate">>],
              ?assert(lists:all(fun(V) -> binary:match(V, [<<"\r">>, <<"\n">>]) =:= nomatch end, Written)),
              ?assertEqual({?TRACE_ID, ?PARENT_ID, 1, ?TC:tracestate([TraceState || TraceState =/= <<>>])},
                           ?TC:extract(Out))
      end, lists:seq(1, 3000)).

%% A property over 2,000 random tracestates (seeded), each built from
%% members labelled valid or invalid by how they were made from the
%% grammar of "tracestate Header Field Values" (keys and values of every
%% length to one past the bounds, every kind of key, characters one of
%% which breaks the rule), with optional whitespace and empty members,
%% split into one to three fields: extract/1 keeps the traceparent, and
%% keeps the combined value exactly when every member is valid, no key
%% repeats, there are at most 32 members and it is within the read bound,
%% cut as the model below cuts when over 512 characters; else it drops it.
random_tracestate_property_test_() ->
    %% About 1 s alone, longer on a busy machine than EUnit's 5 s default.
    {timeout, 60, fun random_tracestate_property/0}.

random_tracestate_property() ->
    rand:seed(exsss, {1, 12, 2026}),
    lists:foreach(
      fun(_) ->
              %% Half of them of valid members only, so that the
              %% combining, the member count and the cut are exercised.
              Mode = lists:nth(rand:uniform(2), [any, valid]),
              Members = [random_member(Mode) || _ <- lists:seq(1, rand:uniform(36) - 1)],
              Fields = random_fields(Members),
              Got = ?TC:extract([{<<"traceparent">>, ?SAMPLED} |
                                 [{<<"tracestate">>, F} || F <- Fields]]),
              Want = {?TRACE_ID, ?PARENT_ID, 1, model_tracestate(Members, Fields)},
              Got =:= Want orelse erlang:error({tracestate, Fields, Want, Got})
      end, lists:seq(1, 2000)).

%% {valid | invalid, Key, Member}: a member as written (optional whitespace
%% around it, or an empty one, Key <<>>).
random_member(valid) ->
    case random_member(any) of
        {valid, _, _} = M -> M;
        {invalid, _, _} -> random_member(valid)
    end;
random_member(any) ->
    case rand:uniform(12) of
        1 -> {valid, <<>>, ows()};
        _ ->
            {KeyOk, Key} = random_key(),
            {ValueOk, Value} = random_value(),
            Ok = case KeyOk andalso ValueOk of true -> valid; false -> invalid end,
            {Ok, Key, <<(ows())/binary, Key/binary, "=", Value/binary, (ows())/binary>>}
    end.

ows() ->
    lists:nth(rand:uniform(5), [<<>>, <<>>, <<" ">>, <<"\t">>, <<" \t ">>]).

%% Keys: most short; some at or one past a bound of their part; some with
%% a character their rule does not allow.
random_key() ->
    Lc = fun() -> $a + rand:uniform(26) - 1 end,
    Digit = fun() -> $0 + rand:uniform(10) - 1 end,
    Keychars = list_to_tuple(lists:seq($a, $z) ++ lists:seq($0, $9) ++ "_-*/"),
    Keychar = fun() -> element(rand:uniform(40), Keychars) end,
    Len = fun(Max) -> case rand:uniform(8) of
                          1 -> Max;
                          2 -> Max + 1;
                          _ -> rand:uniform(min(Max, 12))
                      end end,
    Part = fun(First, Max) ->
                   N = Len(Max),
                   {N =< Max, list_to_binary([First() | [Keychar() || _ <- lists:seq(2, N)]])}
           end,
    case rand:uniform(6) of
        1 ->
            {TOk, Tenant} = Part(fun() -> case rand:uniform(2) of 1 -> Lc(); 2 -> Digit() end end, 241),
            {SOk, System} = Part(Lc, 14),
            {TOk andalso SOk, <<Tenant/binary, "@", System/binary>>};
        2 ->
            %% A character no key may have, at a random place.
            {_, K} = Part(Lc, 8),
            Bad = lists:nth(rand:uniform(8), [$A, $Z, $., $\s, $@, 16#c3, $\r, $:]),
            At = rand:uniform(byte_size(K) + 1) - 1,
            <<Before:At/binary, After/binary>> = K,
            Key = <<Before/binary, Bad, After/binary>>,
            %% `@' makes a multi-tenant key, valid when both parts are; a
            %% space before the key is optional whitespace.
            {Bad =:= $@ andalso At > 0 andalso At < byte_size(K) andalso
                 byte_size(After) =< 14 andalso lcalpha_byte(binary:first(After))
             orelse Bad =:= $\s andalso At =:= 0, Key};
        3 ->
            %% A simple key starting with a digit, or empty.
            {false, list_to_binary([Digit() || _ <- lists:seq(1, rand:uniform(2) - 1)])};
        _ ->
            Part(Lc, 256)
    end.

lcalpha_byte(C) -> C >= $a andalso C =< $z.

%% Values: 1 to 256 of 0x20-0x7e but `,' and `=', not ending in a space,
%% or one past that length, or with a character that breaks the rule. A
%% value ending in spaces is valid: they are optional whitespace.
random_value() ->
    Chrs = list_to_tuple([C || C <- lists:seq(16#20, 16#7e), C =/= $,, C =/= $=]),
    Chr = fun() -> element(rand:uniform(93), Chrs) end,
    N = case rand:uniform(8) of
            1 -> 256;
            2 -> 257;
            _ -> rand:uniform(12)
        end,
    V = list_to_binary([Chr() || _ <- lists:seq(1, N)]),
    case rand:uniform(5) of
        1 ->
            Bad = lists:nth(rand:uniform(6), [$=, $\t, 16#7f, 16#c3, $\n, 0]),
            {false, <<V/binary, Bad, "x">>};
        _ ->
            %% What is left once the whitespace after the member goes
            %% (a space before the value is part of it).
            T = list_to_binary(lists:reverse(drop_ows(lists:reverse(binary_to_list(V))))),
            {T =/= <<>> andalso byte_size(T) =< 256, V}
    end.

%% Spaces and tabs off both ends, byte by byte (string:trim/3 raises on
%% bytes that are not UTF-8).
trim_ows(B) ->
    list_to_binary(lists:reverse(drop_ows(lists:reverse(drop_ows(binary_to_list(B)))))).

drop_ows([C | Rest]) when C =:= $\s; C =:= $\t -> drop_ows(Rest);
drop_ows(L) -> L.

%% The members joined by commas, in one to three fields.
random_fields([]) ->
    [<<>>];
random_fields(Members) ->
    Ms = [M || {_, _, M} <- Members],
    Cuts = lists:usort([rand:uniform(length(Ms)) || _ <- lists:seq(1, rand:uniform(3) - 1)]),
    split_at(Ms, [C || C <- Cuts, C < length(Ms)], 0).

split_at(Ms, [], _) ->
    [iolist_to_binary(lists:join($,, Ms))];
split_at(Ms, [C | Cs], Done) ->
    {Now, Rest} = lists:split(C - Done, Ms),
    [iolist_to_binary(lists:join($,, Now)) | split_at(Rest, Cs, C)].

%% What a validating extractor keeps of these members and fields.
model_tracestate(Members, Fields) ->
    Combined = iolist_to_binary(lists:join($,, Fields)),
    Real = [T || {_, _, M} <- Members, (T = trim_ows(M)) =/= <<>>],
    Keys = [hd(binary:split(T, <<"=">>)) || T <- Real],
    Valid = lists:all(fun({Ok, _, _}) -> Ok =:= valid end, Members)
        andalso length(Real) =< 32 andalso length(lists:usort(Keys)) =:= length(Keys)
        andalso byte_size(Combined) =< 16447,
    case Valid of
        false -> <<>>;
        true ->
            case trim_ows(Combined) of
                T when byte_size(T) =< 512 -> T;
                _ -> model_cut(Real)
            end
    end.

%% "tracestate Limits": while over 512 characters, the last member over
%% 128 goes, and when there is none, the last member.
model_cut(Ms) ->
    case byte_size(iolist_to_binary(lists:join($,, Ms))) =< 512 of
        true ->
            iolist_to_binary(lists:join($,, Ms));
        false ->
            Long = [I || {I, M} <- lists:enumerate(Ms), byte_size(M) > 128],
            Drop = case Long of
                       [] -> length(Ms);
                       _ -> lists:last(Long)
                   end,
            {Before, [_ | After]} = lists:split(Drop - 1, Ms),
            model_cut(Before ++ After)
    end.

lower_bytes(B) ->
    << <<(if C >= $A, C =< $Z -> C + 32; true -> C end)>> || <<C>> <= B >>.

%% The sampling threshold of a tracestate, against the values of the
%% OpenTelemetry specification ("TraceState: Probability Sampling"): th:c
%% is 3/4 of 2^56 (keep 1 in 4), th:8 half. The cases of sdk/deltaqstart's
%% TestOtThreshold, and the collector's reading of them.
threshold_test_() ->
    [?_assertEqual(Want, dqsd_otel_tracecontext:threshold(TraceState))
     || {TraceState, Want} <-
            [{<<"ot=th:c">>, 16#c0000000000000},
             {<<"ot=th:8">>, 16#80000000000000},
             {<<"ot=th:0">>, 0},
             {<<"ot=th:C">>, 16#c0000000000000},
             {<<"ot=th:fffffffffffff">>, 16#fffffffffffff0},
             {<<"ot=th:ffffffffffffff">>, 16#ffffffffffffff},
             {<<"ot=th:fffffffffffffff">>, 0},          % 15 digits
             {<<"ot=th:">>, 0},
             {<<"ot=th:g">>, 0},
             {<<"ot=th:+f">>, 0},                       % no sign
             {<<"ot=th:-1">>, 0},
             {<<>>, 0},
             {<<"ot=">>, 0},
             {<<"ot=rv:ffffffffffffff">>, 0},
             {<<"ot=rv:ffffffffffffff;th:c">>, 16#c0000000000000},
             {<<"ot=th:c;rv:c0000000000000">>, 16#c0000000000000}, % rv = th keeps it
             {<<"ot=th:c;rv:bfffffffffffff">>, 0},      % rv < th would have rejected it
             {<<"ot=th:c;rv:1">>, 16#c0000000000000},   % an rv of another length is ignored
             {<<"ot=th:c;rv:bfffffffffffff;rv:zzzzzzzzzzzzzz">>, 16#c0000000000000},
             {<<"ot=th:4;th:c">>, 16#40000000000000},   % the first th counts
             {<<"ot=th:z;th:c">>, 0},
             {<<"ot=p:8;th:4;x:y">>, 16#40000000000000},
             {<<"ot=;;th:4;">>, 16#40000000000000},
             %% The ot member among others, with optional whitespace.
             {<<"congo=t61rcWkgMzE, ot=th:8 ,rojo=00f067aa0ba902b7">>, 16#80000000000000},
             {<<"congo=th:8">>, 0},
             {<<"xot=th:8">>, 0}]].
