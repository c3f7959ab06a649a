%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc W3C Trace Context: the `traceparent' and `tracestate' headers, read
%% from and written to a header list or map (W3C Recommendation "Trace
%% Context", sections "Traceparent Header" and "Tracestate Header").
%%
%% `traceparent' is parsed strictly: lowercase hex only, version `ff' and
%% all-zero trace or parent ids are invalid, version `00' is exactly 55
%% characters, and a higher version is parsed by the rules of "Versioning of
%% traceparent" (its first four fields, followed by the end or a dash). An
%% invalid, absent or repeated `traceparent' gives no context: the trace
%% restarts. Only the `sampled' flag is kept, since the specification
%% requires other flags to be sent as zero.
%%
%% `tracestate' is validated and carried through unchanged: this library
%% keeps no entry of its own in it, so it has nothing to add or update.
%% Several `tracestate' fields are combined with commas (RFC 7230, section
%% 3.2.2, as the specification requires). The combined value must be a
%% `list' of section "tracestate Header Field Values": at most 32 members
%% (empty and whitespace-only ones, which the section allows, are not
%% counted), each `key=value' with optional whitespace (space, tab) around
%% it, the key a simple key (a lowercase letter, then up to 255 of
%% lowercase letters, digits, `_', `-', `*', `/') or a multi-tenant key
%% (tenant: a lowercase letter or digit and up to 240 more of those;
%% `@'; system: a lowercase letter and up to 13 more), the value 1 to 256
%% printable ASCII characters but `,' and `=', not ending in a space; no
%% key twice ("Combined Header Value"). A value that breaks any of these
%% is not a tracestate this library can parse, and is dropped whole
%% (section "A traceparent is Received", step 3: the vendor MAY discard
%% the entire header), as the Trace Context test suite expects of a
%% validating vendor (its tracestate tests of illegal keys and values,
%% duplicated keys, 33 members) and as the OpenTelemetry SDKs do: sent on,
%% it would break the parsers downstream, and only some members kept
%% would pass on an entry of a vendor that never wrote it so. A value that
%% could inject headers (a CR or LF) is such a value. The traceparent is
%% not affected ("failure to parse tracestate MUST NOT affect the parsing
%% of traceparent"). A valid value of more than 512 characters, the most
%% this library propagates, is cut by whole members as the section
%% "tracestate Limits" prescribes: members longer than 128 characters
%% first (from the end, as many as needed), then the others from the end.
%%
%% What is read is bounded before any of this, so that a header of any size
%% costs the caller no more than a valid one: a tracestate has at most 32
%% list members of at most 513 characters (a key of up to 256, `=', a value
%% of up to 256), 16,447 characters with their commas. A combined value
%% longer than that (which only optional whitespace or empty members could
%% make valid) is dropped unread. A `traceparent' value longer than 1024
%% bytes is invalid, and read no further.
%%
%% Names are matched in any case; names and values may be binaries or
%% strings, as inets (httpd, httpc) and cowboy give them, and are taken as
%% bytes: a value that is not UTF-8, or no string at all, is only invalid
%% (`extract/1' returns `undefined' or drops the tracestate), never an
%% exception. Pure functions:
%% the API is in `dqsd_otel' (`extract/1', `inject/2').
-module(dqsd_otel_tracecontext).

-export([extract/1, inject/2, is_headers/1, parse_traceparent/1, traceparent/3,
         tracestate/1, threshold/1]).

-export_type([headers/0, context/0]).

-type header_name() :: binary() | string().
-type header_value() :: binary() | string().
-type headers() :: [{header_name(), header_value()}]
                 | #{header_name() => header_value()}.
%% Elements of a list that are not `{Name, Value}' pairs are ignored by
%% `extract/1' and kept by `inject/2'.

-type context() :: {TraceId :: <<_:128>>, ParentId :: <<_:64>>,
                    Sampled :: 0 | 1, TraceState :: binary()}.

%% Bounds on a propagated tracestate (section "tracestate Limits": at least
%% 512 characters SHOULD be propagated; members over 128 characters go
%% first when cutting) and on a valid one (at most 32 list members).
-define(MAX_TRACESTATE, 512).
-define(MAX_MEMBERS, 32).
-define(MAX_MEMBER, 128).
%% The longest tracestate the specification allows without optional
%% whitespace, 32 members of 513 characters and their commas, and the most
%% of the header that is read.
-define(MAX_TRACESTATE_INPUT, (32 * 513 + 31)).
%% The longest key, value, tenant id and system id ("Key", "Value").
-define(MAX_KEY, 256).
-define(MAX_VALUE, 256).
-define(MAX_TENANT, 241).
-define(MAX_SYSTEM, 14).
%% The longest traceparent value read; a longer one is invalid. A version
%% 00 value is 55 characters.
-define(MAX_TRACEPARENT_INPUT, 1024).

%% @doc The context of `Headers': the remote parent's trace id, span id,
%% sampled flag and tracestate, or `undefined' when there is no single valid
%% `traceparent'.
-spec extract(headers()) -> context() | undefined.
extract(Headers) ->
    case fields(pairs(Headers), [], []) of
        {[Value], States} ->
            case parse_traceparent(Value) of
                {ok, TraceId, ParentId, Sampled} ->
                    {TraceId, ParentId, Sampled, tracestate(States)};
                error ->
                    undefined
            end;
        %% None, or several: which one would be the parent is unknowable.
        {_, _} ->
            undefined
    end.

%% @doc `Headers' with `traceparent' (version 00) and, unless empty,
%% `tracestate' of `Context', in place of any fields of those names. The
%% tracestate goes through `tracestate/1', as one received would: one that
%% is unsafe to send (a CR or LF would inject headers) is left out. The new
%% fields are strings (as inets' httpc takes them) in a list whose first
%% name is not a binary and in a map with string names, else binaries (as
%% cowboy and gun take them). `badarg' when `Headers' is neither a proper
%% list nor a map: there is nothing to write the fields into.
-spec inject(context(), headers()) -> headers().
inject({TraceId, SpanId, Sampled, TraceState0} = Context, Headers) ->
    is_headers(Headers) orelse erlang:error(badarg, [Context, Headers]),
    TraceState = tracestate([TraceState0 || TraceState0 =/= <<>>]),
    New = [{<<"traceparent">>, traceparent(TraceId, SpanId, Sampled)}
           | [{<<"tracestate">>, TraceState} || TraceState =/= <<>>]],
    if
        is_map(Headers) ->
            Kept = maps:filter(fun(K, _) -> field(K) =:= other end, Headers),
            Strings = lists:any(fun erlang:is_list/1, maps:keys(Headers)),
            maps:merge(Kept, maps:from_list(styled(Strings, New)));
        is_list(Headers) ->
            Strings = case Headers of
                          [{Name, _} | _] -> not is_binary(Name);
                          _ -> true
                      end,
            [H || H <- Headers, not is_trace_field(H)] ++ styled(Strings, New)
    end.

%% @doc Whether `Headers' is headers: a map or a proper list (of anything:
%% the elements that are not `{Name, Value}' are ignored or kept).
-spec is_headers(term()) -> boolean().
is_headers(Headers) when is_map(Headers) -> true;
is_headers(Headers) when is_list(Headers), length(Headers) >= 0 -> true;
is_headers(_) -> false.

%% @doc Parses a `traceparent' value (optional whitespace around it is
%% allowed, as around any HTTP field value). Returns the trace id, the
%% parent id and the sampled flag, or `error'.
-spec parse_traceparent(binary()) -> {ok, <<_:128>>, <<_:64>>, 0 | 1} | error.
parse_traceparent(Value) ->
    case trim(Value) of
        <<V:2/binary, $-, Rest/binary>> ->
            case decode(V) of
                <<16#ff>> -> error;
                <<0>> when byte_size(Rest) =:= 52 -> ids(Rest);
                <<0>> -> error;
                <<_Higher>> -> higher_version(Rest);
                error -> error
            end;
        _ ->
            error
    end.

%% @doc The version 00 `traceparent' value of a span. Flags other than
%% `sampled' are sent as zero ("Other Flags").
-spec traceparent(<<_:128>>, <<_:64>>, 0 | 1) -> binary().
traceparent(TraceId, SpanId, Sampled) ->
    <<"00-", (dqsd_otel_otlp:hex(TraceId))/binary, $-,
      (dqsd_otel_otlp:hex(SpanId))/binary, "-0", ($0 + (Sampled band 1))>>.

%% @doc The tracestate to carry on, from the values of the `tracestate'
%% fields received, in order: combined, unchanged when valid and within
%% 512 characters, cut by whole members when valid and longer, `<<>>' when
%% absent, invalid or longer than a valid one can be.
-spec tracestate([binary()]) -> binary().
tracestate([]) ->
    <<>>;
tracestate(Values) ->
    case bounded(Values) of
        too_long ->
            <<>>;
        Read ->
            Combined = trim(Read),
            case members(Combined) of
                invalid -> <<>>;
                _ when byte_size(Combined) =< ?MAX_TRACESTATE -> Combined;
                Members -> cut(Members)
            end
    end.

%% @doc The sampling threshold of a tracestate: the 56-bit rejection
%% threshold T of its OpenTelemetry member's `th' (`ot=th:c' is
%% 16#c0000000000000), 1 to 14 hex digits with the trailing zeros omitted,
%% the span having been kept with probability (2^56 - T) / 2^56
%% (OpenTelemetry, "TraceState: Probability Sampling"). 0, which the batch
%% start event reads as none, when there is no `ot' member with a valid
%% `th' (only the first `th' counts), and when the member's explicit
%% randomness `rv' (exactly 14 hex digits) is below T: that threshold would
%% have rejected the span, so the span was not kept with it ("Tracestate
%% handling requirements"). `th:0' is 0 too: kept with probability 1. The
%% collector reads a tracestate so (its internal/contract, Threshold), and
%% so does sdk/deltaqstart.
-spec threshold(binary()) -> 0..16#ffffffffffffff.
threshold(<<>>) ->
    0;
threshold(TraceState) ->
    case ot_member(binary:split(TraceState, <<",">>, [global])) of
        undefined -> 0;
        Ot -> ot_threshold(binary:split(Ot, <<";">>, [global]), undefined, undefined)
    end.

ot_member([M | Rest]) ->
    case trim(M) of
        <<"ot=", Ot/binary>> -> Ot;
        _ -> ot_member(Rest)
    end;
ot_member([]) ->
    undefined.

%% ot_threshold(SubKeys, Th, Rv): Th is the first th's value (`invalid'
%% when it does not parse), Rv the last 14-digit rv's (`invalid' when it
%% does not parse, as none), as the collector reads them.
ot_threshold([<<"th:", V/binary>> | Rest], undefined, Rv) ->
    ot_threshold(Rest, hex56(V), Rv);
ot_threshold([<<"rv:", V:14/binary>> | Rest], Th, _Rv) ->
    ot_threshold(Rest, Th, hex56(V));
ot_threshold([_ | Rest], Th, Rv) ->
    ot_threshold(Rest, Th, Rv);
ot_threshold([], Th, Rv) when is_integer(Th), not is_integer(Rv) ->
    Th;
ot_threshold([], Th, Rv) when is_integer(Th), Rv >= Th ->
    Th;
ot_threshold([], _, _) ->
    0.

%% 1 to 14 hex digits, the 56-bit value with its trailing zeros omitted
%% (digit by digit: binary_to_integer/2 would take a sign).
hex56(V) when byte_size(V) >= 1, byte_size(V) =< 14 ->
    hex56(V, 0, 4 * (14 - byte_size(V)));
hex56(_) ->
    invalid.

hex56(<<C, Rest/binary>>, Acc, Shift) when C >= $0, C =< $9 ->
    hex56(Rest, Acc bsl 4 bor (C - $0), Shift);
hex56(<<C, Rest/binary>>, Acc, Shift) when C >= $a, C =< $f ->
    hex56(Rest, Acc bsl 4 bor (C - $a + 10), Shift);
hex56(<<C, Rest/binary>>, Acc, Shift) when C >= $A, C =< $F ->
    hex56(Rest, Acc bsl 4 bor (C - $A + 10), Shift);
hex56(<<>>, Acc, Shift) ->
    Acc bsl Shift;
hex56(_, _, _) ->
    invalid.

%%--------------------------------------------------------------------

%% The version 00 fields; a higher version has at least them, each followed
%% by a dash or, for the flags, the end ("Versioning of traceparent").
ids(<<T:32/binary, $-, P:16/binary, $-, F:2/binary>>) ->
    ids(T, P, F);
ids(_) ->
    error.

higher_version(<<T:32/binary, $-, P:16/binary, $-, F:2/binary>>) ->
    ids(T, P, F);
higher_version(<<T:32/binary, $-, P:16/binary, $-, F:2/binary, $-, _/binary>>) ->
    ids(T, P, F);
higher_version(_) ->
    error.

ids(T, P, F) ->
    case {decode(T), decode(P), decode(F)} of
        {<<0:128>>, _, _} -> error;
        {_, <<0:64>>, _} -> error;
        {<<_:128>> = TraceId, <<_:64>> = ParentId, <<Flags>>} ->
            {ok, TraceId, ParentId, Flags band 1};
        _ -> error
    end.

%% Lowercase hex digits to bytes (binary:decode_hex/1 would take uppercase).
decode(Hex) ->
    case lists:all(fun(C) -> (C >= $0 andalso C =< $9) orelse (C >= $a andalso C =< $f) end,
                   binary_to_list(Hex)) of
        true -> binary:decode_hex(Hex);
        false -> error
    end.

%% The values combined with commas, or `too_long' when that is longer than
%% ?MAX_TRACESTATE_INPUT bytes (each value is read no further: prefix/2).
bounded(Values) ->
    bounded(Values, ?MAX_TRACESTATE_INPUT, []).

bounded([V | Rest], Room, Acc) when byte_size(V) =< Room ->
    %% Room for the comma before the next value.
    bounded(Rest, Room - byte_size(V) - 1, [V | Acc]);
bounded([_ | _], _Room, _Acc) ->
    too_long;
bounded([], _Room, Acc) ->
    iolist_to_binary(lists:join($,, lists:reverse(Acc))).

%% The members of a combined value, without the optional whitespace around
%% them and without the empty ones, or `invalid' when it is no `list':
%% a member that is no valid `key=value', a key twice, more than 32
%% members.
members(Combined) ->
    members(binary:split(Combined, <<",">>, [global]), 0, #{}, []).

members([], _N, _Keys, Acc) ->
    lists:reverse(Acc);
members([P | Rest], N, Keys, Acc) ->
    case trim(P) of
        <<>> ->
            members(Rest, N, Keys, Acc);
        _ when N =:= ?MAX_MEMBERS ->
            invalid;
        M ->
            case member_key(M) of
                invalid -> invalid;
                Key when is_map_key(Key, Keys) -> invalid;
                Key -> members(Rest, N + 1, Keys#{Key => true}, [M | Acc])
            end
    end.

%% The key of a list member `key=value', or `invalid' when the member is
%% not one ("list-members").
member_key(M) ->
    case binary:split(M, <<"=">>) of
        [Key, Value] ->
            case valid_key(Key) andalso valid_value(Value) of
                true -> Key;
                false -> invalid
            end;
        [_] ->
            invalid
    end.

%% key = simple-key / multi-tenant-key ("Key").
valid_key(Key) ->
    case binary:split(Key, <<"@">>) of
        [Simple] -> key_part(Simple, ?MAX_KEY, fun lcalpha/1);
        [Tenant, System] -> key_part(Tenant, ?MAX_TENANT, fun lcalpha_digit/1)
                                andalso key_part(System, ?MAX_SYSTEM, fun lcalpha/1)
    end.

%% A first character that First accepts, then key characters, Max in all.
key_part(<<C, Rest/binary>> = Part, Max, First) when byte_size(Part) =< Max ->
    First(C) andalso keychars(Rest);
key_part(_, _, _) ->
    false.

keychars(<<C, Rest/binary>>) ->
    (lcalpha_digit(C) orelse C =:= $_ orelse C =:= $- orelse C =:= $* orelse C =:= $/)
        andalso keychars(Rest);
keychars(<<>>) ->
    true.

lcalpha(C) -> C >= $a andalso C =< $z.

lcalpha_digit(C) -> lcalpha(C) orelse (C >= $0 andalso C =< $9).

%% value = 0*255(chr) nblk-chr: 1 to 256 printable ASCII characters but
%% `,' and `=', the last not a space ("Value").
valid_value(Value) when byte_size(Value) >= 1, byte_size(Value) =< ?MAX_VALUE ->
    binary:last(Value) =/= $\s andalso value_chars(Value);
valid_value(_) ->
    false.

value_chars(<<C, Rest/binary>>) when C >= 16#20, C =< 16#7e, C =/= $,, C =/= $= ->
    value_chars(Rest);
value_chars(<<>>) ->
    true;
value_chars(_) ->
    false.

%% The members left when, while they are too long together (a valid list
%% has no more than 32), those over 128 characters are removed, from the
%% end, and then the others from the end. Two passes over the list, each
%% linear.
cut(Members) ->
    Sized = [{byte_size(M), M} || M <- Members],
    N = length(Sized),
    Total = lists:sum([S || {S, _} <- Sized]) + N - 1,
    {Kept, Total1, N1} = drop_long(lists:reverse(Sized), Total, N, []),
    Left = drop_last(lists:reverse(Kept), Total1, N1),
    iolist_to_binary(lists:join($,, [M || {_, M} <- lists:reverse(Left)])).

%% Over the limits: Total characters (commas included) in N members.
over(Total, N) ->
    Total > ?MAX_TRACESTATE orelse N > ?MAX_MEMBERS.

%% From the last member back, removes long ones while over the limits;
%% returns the rest in their order, and their length and number.
drop_long([{Size, _} = Member | Rest], Total, N, Acc) when Size > ?MAX_MEMBER ->
    case over(Total, N) of
        true -> drop_long(Rest, Total - Size - 1, N - 1, Acc);
        false -> drop_long(Rest, Total, N, [Member | Acc])
    end;
drop_long([Member | Rest], Total, N, Acc) ->
    drop_long(Rest, Total, N, [Member | Acc]);
drop_long([], Total, N, Acc) ->
    {Acc, Total, N}.

%% From the last member (the head of the reversed list), removes members
%% while over the limits.
drop_last([{Size, _} | Rest] = Reversed, Total, N) ->
    case over(Total, N) of
        true -> drop_last(Rest, Total - Size - 1, N - 1);
        false -> Reversed
    end;
drop_last([], _, _) ->
    [].

%% The traceparent values and tracestate values among the pairs, in order.
fields([{Name, Value} | Rest], Parents, States) ->
    case field(Name) of
        traceparent -> fields(Rest, [traceparent_value(Value) | Parents], States);
        tracestate -> fields(Rest, Parents, [prefix(Value, ?MAX_TRACESTATE_INPUT + 1) | States]);
        other -> fields(Rest, Parents, States)
    end;
fields([_ | Rest], Parents, States) ->
    fields(Rest, Parents, States);
fields(_, Parents, States) ->
    {lists:reverse(Parents), lists:reverse(States)}.

pairs(Headers) when is_map(Headers) -> maps:to_list(Headers);
pairs(Headers) when is_list(Headers) -> Headers;
pairs(_) -> [].

is_trace_field({Name, _}) -> field(Name) =/= other;
is_trace_field(_) -> false.

field(Name) ->
    case lower(Name) of
        <<"traceparent">> -> traceparent;
        <<"tracestate">> -> tracestate;
        _ -> other
    end.

%% ASCII lowercase of a name of the length of ours; anything else is
%% another field.
lower(Name) when is_binary(Name), byte_size(Name) >= 10, byte_size(Name) =< 11 ->
    << <<(if C >= $A, C =< $Z -> C + 32; true -> C end)>> || <<C>> <= Name >>;
lower(Name) when is_list(Name) ->
    case value(Name) of
        <<_/binary>> = B when byte_size(B) >= 10, byte_size(B) =< 11 -> lower(B);
        _ -> other
    end;
lower(_) ->
    other.

%% A field value as a binary; one that is no string at all is invalid
%% (it cannot parse as a traceparent, and is not printable as a tracestate).
value(V) when is_binary(V) ->
    V;
value(V) ->
    try iolist_to_binary(V)
    catch error:badarg -> <<0>>
    end.

%% A traceparent value, or `<<0>>' (invalid) when it is longer than
%% ?MAX_TRACEPARENT_INPUT bytes: the rest of it is never read.
traceparent_value(Value) ->
    case prefix(Value, ?MAX_TRACEPARENT_INPUT) of
        P when byte_size(P) > ?MAX_TRACEPARENT_INPUT -> <<0>>;
        P -> P
    end.

%% The first Max bytes of a field value (value/1), read no further: a
%% binary is cut in place, an iolist walked only as far as Max bytes. One
%% longer than Max keeps one byte more than Max, so that the bound on what
%% is read knows it was cut.
prefix(V, Max) when is_binary(V) ->
    binary:part(V, 0, min(byte_size(V), Max + 1));
prefix(V, Max) ->
    try take(V, Max + 1, []) of
        {Acc, _} -> iolist_to_binary(lists:reverse(Acc))
    catch
        throw:not_iodata -> <<0>>
    end.

%% Up to N bytes of an iolist, in reverse order, and what is left of N.
take(_, 0, Acc) ->
    {Acc, 0};
take([], N, Acc) ->
    {Acc, N};
take([H | T], N, Acc) ->
    {Acc1, N1} = take(H, N, Acc),
    take(T, N1, Acc1);
take(B, N, Acc) when is_binary(B) ->
    Part = binary:part(B, 0, min(byte_size(B), N)),
    {[Part | Acc], N - byte_size(Part)};
take(C, N, Acc) when is_integer(C), C >= 0, C =< 255 ->
    {[C | Acc], N - 1};
take(_, _, _) ->
    throw(not_iodata).

styled(true, New) -> [{binary_to_list(K), binary_to_list(V)} || {K, V} <- New];
styled(false, New) -> New.

%% Optional whitespace (space and tab) off both ends, byte by byte: a field
%% value is bytes, not UTF-8 text, so that no value (0xff, a lone 0xc3) can
%% make the trim raise (string:trim/3 raises badarg on invalid UTF-8).
trim(Bin) ->
    trim_trailing(trim_leading(Bin)).

trim_leading(<<C, Rest/binary>>) when C =:= $\s; C =:= $\t ->
    trim_leading(Rest);
trim_leading(Bin) ->
    Bin.

trim_trailing(Bin) ->
    case byte_size(Bin) of
        0 ->
            Bin;
        N ->
            case binary:at(Bin, N - 1) of
                C when C =:= $\s; C =:= $\t -> trim_trailing(binary:part(Bin, 0, N - 1));
                _ -> Bin
            end
    end.
