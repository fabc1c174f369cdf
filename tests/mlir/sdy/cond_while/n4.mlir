module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<12x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<6x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<12x6xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<12xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %arg1, %iterArg_2 = %c, %iterArg_3 = %arg0) : tensor<6x6xf32>, tensor<i32>, tensor<12x6xf32>
    cond {
      %c_4 = stablehlo.constant dense<4> : tensor<i32>
      %6 = stablehlo.compare LT, %iterArg_2, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.multiply %iterArg_3, %iterArg_3 : tensor<12x6xf32>
      %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %8 = stablehlo.reduce(%7 init: %cst_5) applies stablehlo.add across dimensions = [0, 1] : (tensor<12x6xf32>, tensor<f32>) -> tensor<f32>
      %cst_6 = stablehlo.constant dense<1.000000e+06> : tensor<f32>
      %9 = stablehlo.compare LT, %8, %cst_6, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %c_7 = stablehlo.constant dense<false> : tensor<i1>
      %10 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i1>) -> tensor<i1>
      %11 = stablehlo.compare NE, %6, %10, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %12 = stablehlo.convert %11 : tensor<i1>
      %13 = stablehlo.and %12, %9 : tensor<i1>
      stablehlo.return %13 : tensor<i1>
    } do {
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %6 = stablehlo.add %iterArg_2, %c_4 : tensor<i32>
      %7 = stablehlo.dot_general %iterArg_3, %iterArg, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<12x6xf32>, tensor<6x6xf32>) -> tensor<12x6xf32>
      %8 = stablehlo.tanh %7 : tensor<12x6xf32>
      %9 = stablehlo.add %8, %iterArg_3 : tensor<12x6xf32>
      stablehlo.return %iterArg, %6, %9 : tensor<6x6xf32>, tensor<i32>, tensor<12x6xf32>
    }
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0#2 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<12x6xf32>, tensor<f32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.compare GT, %1, %cst_0, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %3 = stablehlo.convert %2 : (tensor<i1>) -> tensor<i32>
    %4 = "stablehlo.case"(%3) ({
      %6 = stablehlo.negate %0#2 : tensor<12x6xf32>
      %7 = stablehlo.exponential %6 : tensor<12x6xf32>
      stablehlo.return %7 : tensor<12x6xf32>
    }, {
      %cst_2 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %6 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<12x6xf32>
      %7 = stablehlo.multiply %0#2, %6 : tensor<12x6xf32>
      stablehlo.return %7 : tensor<12x6xf32>
    }) : (tensor<i32>) -> tensor<12x6xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %5 = stablehlo.reduce(%4 init: %cst_1) applies stablehlo.maximum across dimensions = [1] : (tensor<12x6xf32>, tensor<f32>) -> tensor<12xf32>
    return %4, %5 : tensor<12x6xf32>, tensor<12xf32>
  }
}
