%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% Assertion macros for the EUnit tests, after eunit.hrl: Debian's
%% erlang-nox ships EUnit without its header (that comes with erlang-dev),
%% and the tests must run where only erlang-nox is installed. EUnit finds
%% the *_test and *_test_ functions because test modules export everything.
-compile([export_all, nowarn_export_all]).

-define(assert(Expr),
        ((fun() ->
                  case (Expr) of
                      true -> ok;
                      X__V -> erlang:error({assert, [{module, ?MODULE}, {line, ?LINE},
                                                    {expression, (??Expr)},
                                                    {expected, true}, {value, X__V}]})
                  end
          end)())).

-define(assertNot(Expr), ?assert(not (Expr))).

-define(assertEqual(Expect, Expr),
        ((fun(X__X) ->
                  case (Expr) of
                      X__X -> ok;
                      X__V -> erlang:error({assertEqual, [{module, ?MODULE}, {line, ?LINE},
                                                         {expression, (??Expr)},
                                                         {expected, X__X}, {value, X__V}]})
                  end
          end)(Expect))).

-define(assertNotEqual(Unexpected, Expr),
        ((fun(X__X) ->
                  case (Expr) of
                      X__X -> erlang:error({assertNotEqual, [{module, ?MODULE}, {line, ?LINE},
                                                            {expression, (??Expr)},
                                                            {value, X__X}]});
                      _ -> ok
                  end
          end)(Unexpected))).

-define(assertMatch(Guard, Expr),
        ((fun() ->
                  case (Expr) of
                      Guard -> ok;
                      X__V -> erlang:error({assertMatch, [{module, ?MODULE}, {line, ?LINE},
                                                         {expression, (??Expr)},
                                                         {pattern, (??Guard)}, {value, X__V}]})
                  end
          end)())).

-define(assertException(Class, Term, Expr),
        ((fun() ->
                  try (Expr) of
                      X__V -> erlang:error({assertException, [{module, ?MODULE}, {line, ?LINE},
                                                             {expression, (??Expr)},
                                                             {pattern, {(??Class), (??Term)}},
                                                             {unexpected_success, X__V}]})
                  catch
                      Class:Term -> ok;
                      X__C:X__T -> erlang:error({assertException, [{module, ?MODULE}, {line, ?LINE},
                                                                 {expression, (??Expr)},
                                                                 {pattern, {(??Class), (??Term)}},
                                                                 {unexpected_exception, {X__C, X__T}}]})
                  end
          end)())).

-define(_test(Expr), {?LINE, fun() -> (Expr) end}).
-define(_assert(Expr), ?_test(?assert(Expr))).
-define(_assertEqual(Expect, Expr), ?_test(?assertEqual(Expect, Expr))).
-define(_assertMatch(Guard, Expr), ?_test(?assertMatch(Guard, Expr))).
