// Tabs are drawn as four columns, in the source line and under it alike.
kernel k(A: tensor<f32>[N]) {
	let x = A[0] +	)	//~ ERROR expected expression
	// a comment with wide text: 日本語
	let 日本 = 1  //~ ERROR unexpected characters
}
